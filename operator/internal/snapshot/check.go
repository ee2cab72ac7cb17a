package snapshot

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
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
// or one of its keys is missing (CredentialsMissing), or its PVC does not exist
// (DestinationInvalid). The credentials are only checked for presence.
type Unusable struct{ Reason, Message string }

func (u *Unusable) Error() string { return u.Message }

// Check returns an *Unusable for a location that cannot work, nil for one that may, or an API error.
func Check(ctx context.Context, pvcs client.Reader, secrets SecretReader, ns string, s3 *v1alpha2.S3Location, pvc *v1alpha2.PVCLocation) error {
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
