package authcred

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/tlsmaterial"
)

// secrets is a SecretReader over a map, reporting absent names as tlsmaterial does.
type secrets map[string]map[string][]byte

func (s secrets) Secret(_ context.Context, ns, name string) (*corev1.Secret, error) {
	d, ok := s[name]
	if !ok {
		return nil, &tlsmaterial.MissingSecretError{Namespace: ns, Name: name}
	}
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: d}, nil
}

func authCluster(latched, passwordless bool) *v1alpha2.EtcdCluster {
	c := &v1alpha2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", UID: "uid-1"},
		Spec: v1alpha2.EtcdClusterSpec{Auth: &v1alpha2.AuthSpec{Enabled: true,
			RootCredentialsSecretRef: &corev1.LocalObjectReference{Name: "root"}}},
		Status: v1alpha2.EtcdClusterStatus{AuthEnabled: latched},
	}
	if passwordless {
		c.Spec.Auth = &v1alpha2.AuthSpec{Enabled: true, PasswordlessRoot: true}
	}
	return c
}

// A passwordless root is wanted auth, and is dialled by certificate alone: no username, no
// Secret to read.
func TestCredentialsPasswordlessRoot(t *testing.T) {
	ctx := context.Background()
	c := authCluster(true, true)
	if !Wanted(c) || !Passwordless(c) {
		t.Fatalf("Wanted %v, Passwordless %v: want both", Wanted(c), Passwordless(c))
	}
	op := OperatorSecretData(Operator{Username: v1alpha2.OperatorUser, Password: "op-pw"})
	if user, pass, err := Credentials(ctx, secrets{v1alpha2.OperatorAuthSecretName("c"): op}, c); err != nil || user != v1alpha2.OperatorUser || pass != "op-pw" {
		t.Errorf("with the owned Secret: %q/%q %v, want the operator's user", user, pass, err)
	}
	if user, pass, err := Credentials(ctx, secrets{}, c); err != nil || user != "" || pass != "" {
		t.Errorf("without it: %q/%q %v, want no username (root by certificate)", user, pass, err)
	}
}

func TestCredentials(t *testing.T) {
	ctx := context.Background()
	root := map[string][]byte{"password": []byte("root-pw")}
	op := OperatorSecretData(Operator{Username: v1alpha2.OperatorUser, Password: "op-pw"})
	cases := []struct {
		name       string
		latched    bool
		secrets    secrets
		user, pass string
		missing    string // substring of a MissingError, or "" for none
	}{
		{"operator's own user once latched", true, secrets{"root": root, v1alpha2.OperatorAuthSecretName("c"): op}, v1alpha2.OperatorUser, "op-pw", ""},
		{"root when the owned Secret is gone", true, secrets{"root": root}, v1alpha2.RootUser, "root-pw", ""},
		{"root Secret missing", true, secrets{}, "", "", "ns/root does not exist"},
		{"password key empty", true, secrets{"root": {"password": nil}}, "", "", `no (or an empty) "password" key`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			user, pass, err := Credentials(ctx, tc.secrets, authCluster(tc.latched, false))
			var missing *MissingError
			switch {
			case tc.missing != "":
				if !errors.As(err, &missing) || !strings.Contains(missing.Message, tc.missing) {
					t.Fatalf("error %v, want a MissingError with %q", err, tc.missing)
				}
			case err != nil:
				t.Fatal(err)
			case user != tc.user || pass != tc.pass:
				t.Errorf("got %q/%q, want %q/%q", user, pass, tc.user, tc.pass)
			}
		})
	}
}

func TestHashIsSaltedAndNeverThePassword(t *testing.T) {
	a, b := authCluster(true, false), authCluster(true, false)
	b.UID = "uid-2"
	h := Hash(a, "secret-pw")
	if h != Hash(a, "secret-pw") || h == Hash(a, "other-pw") {
		t.Error("the hash must be stable per password and differ between passwords")
	}
	if h == Hash(b, "secret-pw") {
		t.Error("the same password must hash differently in another cluster (salt)")
	}
	if strings.Contains(h, "secret-pw") || len(h) != 64 {
		t.Errorf("hash %q", h)
	}
}

func TestNewPassword(t *testing.T) {
	p, q := NewPassword(), NewPassword()
	if len(p) != 64 || p == q {
		t.Errorf("passwords %q %q: want 64 random hex characters", p, q)
	}
}
