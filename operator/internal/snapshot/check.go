package snapshot

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/artifact"
	"github.com/cozystack/etcd-operator/operator/internal/tlsmaterial"
)

// Keys of an S3 credentials Secret (s3.credentialsSecretRef).
const (
	SecretKeyAccessKeyID     = "AWS_ACCESS_KEY_ID"
	SecretKeySecretAccessKey = "AWS_SECRET_ACCESS_KEY"
)

// SecretReader reads one Secret (tlsmaterial.Source: through the label-restricted cache, else
// the API).
type SecretReader interface {
	Secret(ctx context.Context, namespace, name string) (*corev1.Secret, error)
}

// Unusable says why a location cannot work before an agent tries it: its S3 credentials Secret
// or one of its keys is missing (CredentialsMissing), its PVC does not exist
// (DestinationInvalid), or its encryption Secret lacks the age key needed
// (EncryptionKeyMissing). The credentials are only checked for presence, the age keys parsed.
type Unusable struct{ Reason, Message string }

func (u *Unusable) Error() string { return u.Message }

// KeyUse is what an encryption Secret must hold a key for.
type KeyUse int

const (
	// KeysToWrite: a recipient (explicit, or the newest identity's).
	KeysToWrite KeyUse = iota
	// KeysToRead: an identity.
	KeysToRead
)

// Check returns an *Unusable for a location that cannot work, nil for one that may, or an API
// error. enc, when set, must name a Secret with keys for use.
func Check(ctx context.Context, pvcs client.Reader, secrets SecretReader, ns string, s3 *v1alpha2.S3Location, pvc *v1alpha2.PVCLocation,
	enc *v1alpha2.SnapshotEncryption, use KeyUse) error {
	if err := checkLocation(ctx, pvcs, secrets, ns, s3, pvc); err != nil {
		return err
	}
	return checkKeys(ctx, secrets, ns, enc, use)
}

// checkKeys parses the encryption Secret's keys (only to check them: the agents read them from
// their own mount). Messages name the Secret and key, never a key's text.
func checkKeys(ctx context.Context, secrets SecretReader, ns string, enc *v1alpha2.SnapshotEncryption, use KeyUse) error {
	if enc == nil {
		return nil
	}
	name := enc.SecretRef.Name
	sec, err := secrets.Secret(ctx, ns, name)
	var missing *tlsmaterial.MissingSecretError
	if apierrors.IsNotFound(err) || errors.As(err, &missing) {
		return &Unusable{v1alpha2.ReasonEncryptionKeyMissing, fmt.Sprintf("encryption Secret %s does not exist", name)}
	}
	if err != nil {
		return err
	}
	k, err := artifact.ParseKeyring(sec.Data[v1alpha2.EncryptionIdentitiesKey], sec.Data[v1alpha2.EncryptionRecipientsKey])
	switch {
	case err != nil:
		return &Unusable{v1alpha2.ReasonEncryptionKeyMissing, fmt.Sprintf("encryption Secret %s: %v", name, err)}
	case use == KeysToRead && !k.CanRead():
		return &Unusable{v1alpha2.ReasonEncryptionKeyMissing, fmt.Sprintf(
			"encryption Secret %s has no %q key with an age identity (AGE-SECRET-KEY-…): recipients alone cannot decrypt", name, v1alpha2.EncryptionIdentitiesKey)}
	case use == KeysToWrite && len(k.Writing()) == 0:
		return &Unusable{v1alpha2.ReasonEncryptionKeyMissing, fmt.Sprintf("encryption Secret %s has no age recipient to encrypt to", name)}
	}
	return nil
}

func checkLocation(ctx context.Context, pvcs client.Reader, secrets SecretReader, ns string, s3 *v1alpha2.S3Location, pvc *v1alpha2.PVCLocation) error {
	switch {
	case s3 != nil:
		name := s3.CredentialsSecretRef.Name
		sec, err := secrets.Secret(ctx, ns, name)
		var missing *tlsmaterial.MissingSecretError
		if apierrors.IsNotFound(err) || errors.As(err, &missing) {
			return &Unusable{v1alpha2.ReasonCredentialsMissing, fmt.Sprintf("S3 credentials Secret %s does not exist", name)}
		}
		if err != nil {
			return err
		}
		for _, k := range []string{SecretKeyAccessKeyID, SecretKeySecretAccessKey} {
			if len(sec.Data[k]) == 0 {
				return &Unusable{v1alpha2.ReasonCredentialsMissing, fmt.Sprintf("S3 credentials Secret %s has no %s key", name, k)}
			}
		}
	case pvc != nil:
		err := pvcs.Get(ctx, client.ObjectKey{Namespace: ns, Name: pvc.ClaimName}, &corev1.PersistentVolumeClaim{})
		if apierrors.IsNotFound(err) {
			return &Unusable{v1alpha2.ReasonDestinationInvalid, fmt.Sprintf("PersistentVolumeClaim %s does not exist", pvc.ClaimName)}
		}
		return err
	}
	return nil
}
