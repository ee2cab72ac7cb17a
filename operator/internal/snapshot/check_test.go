package snapshot

import (
	"context"
	"errors"
	"strings"
	"testing"

	"filippo.io/age"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

type secrets map[string]*corev1.Secret

func (s secrets) Secret(_ context.Context, _, name string) (*corev1.Secret, error) {
	if sec, ok := s[name]; ok {
		return sec, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, name)
}

// The encryption Secret is checked before any agent Pod mounts it: missing, unparsable, or
// without the key the job needs is EncryptionKeyMissing, naming the Secret and never a key.
func TestCheckEncryptionKeys(t *testing.T) {
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	keys := func(ids, recs string) *corev1.Secret {
		return &corev1.Secret{Data: map[string][]byte{v1alpha2.EncryptionIdentitiesKey: []byte(ids), v1alpha2.EncryptionRecipientsKey: []byte(recs)}}
	}
	store := secrets{
		"both":       keys(id.String()+"\n", id.Recipient().String()+"\n"),
		"identity":   keys(id.String()+"\n", ""),
		"recipients": keys("", id.Recipient().String()+"\n"),
		"empty":      keys("", ""),
		"swapped":    keys(id.Recipient().String()+"\n", ""),
	}
	for _, tc := range []struct {
		secret string
		use    KeyUse
		want   string // "" fine, else a part of the message
	}{
		{"both", KeysToWrite, ""}, {"both", KeysToRead, ""},
		{"identity", KeysToWrite, ""}, {"identity", KeysToRead, ""},
		{"recipients", KeysToWrite, ""}, {"recipients", KeysToRead, "recipients alone cannot decrypt"},
		{"empty", KeysToWrite, "no age identity"},
		{"swapped", KeysToRead, "identities: error at line 1"},
		{"absent", KeysToWrite, "encryption Secret absent does not exist"},
	} {
		enc := &v1alpha2.SnapshotEncryption{SecretRef: corev1.LocalObjectReference{Name: tc.secret}}
		err := Check(context.Background(), nil, store, "ns", nil, nil, enc, tc.use)
		var u *Unusable
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s for use %d: %v", tc.secret, tc.use, err)
		case tc.want != "" && (!errors.As(err, &u) || u.Reason != v1alpha2.ReasonEncryptionKeyMissing || !strings.Contains(u.Message, tc.want)):
			t.Errorf("%s for use %d: %v, want %s %q", tc.secret, tc.use, err, v1alpha2.ReasonEncryptionKeyMissing, tc.want)
		case err != nil && strings.Contains(err.Error(), "AGE-SECRET-KEY-1"):
			t.Errorf("%s: the message shows a key: %v", tc.secret, err)
		}
	}
	if err := Check(context.Background(), nil, store, "ns", nil, nil, nil, KeysToRead); err != nil {
		t.Errorf("no encryption: %v", err)
	}
}
