// Package authcred decides which credentials the operator presents to a cluster's etcd, and
// reads and writes the Secrets they come from. Both controllers dial through one client pool,
// so both must ask here: different answers for the same cluster would rebuild its client on
// every pass.
//
// Once auth is on, the operator authenticates as its own etcd user (v1alpha2.OperatorUser,
// role root) whose random password lives in the owned Secret <cluster>-operator-auth. Root's
// password belongs to the user (spec.auth.rootCredentialsSecretRef); the operator only keeps a
// salted hash of the one it applied, to notice a change and apply it without knowing the old
// one. Root's password is used to dial only when the operator's own user is unusable (its
// Secret lost, or a cluster restored from a snapshot that had auth on).
package authcred

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/tlsmaterial"
)

// Keys of the owned Secret.
const (
	KeyUsername = corev1.BasicAuthUsernameKey
	KeyPassword = corev1.BasicAuthPasswordKey
	// KeyRootHash is the salted SHA-256 of root's password as last applied to etcd.
	KeyRootHash = "applied-root-password-sha256"
)

// SecretReader reads one Secret, reporting a missing one as a *tlsmaterial.MissingSecretError
// or a NotFound API error. tlsmaterial.Source is the one to use: its cache holds only labelled
// Secrets, so the operator never caches every Secret.
type SecretReader interface {
	Secret(ctx context.Context, namespace, name string) (*corev1.Secret, error)
}

// Wanted reports whether spec asks for auth.
func Wanted(c *v1alpha2.EtcdCluster) bool {
	return c.Spec.Auth != nil && c.Spec.Auth.Enabled && (c.Spec.Auth.RootCredentialsSecretRef != nil || c.Spec.Auth.PasswordlessRoot)
}

// Passwordless reports a root without a password (spec.auth.passwordlessRoot): it is reached
// only by a client certificate whose CN is root, so dialling as root means dialling with the
// operator's client certificate and no username.
func Passwordless(c *v1alpha2.EtcdCluster) bool {
	return c.Spec.Auth != nil && c.Spec.Auth.PasswordlessRoot
}

// MissingError says the root credentials cannot be read: the Secret or its password key is
// missing. The message never contains a password.
type MissingError struct{ Message string }

func (e *MissingError) Error() string { return e.Message }

// RootPassword reads root's password (the password key of spec.auth.rootCredentialsSecretRef)
// and returns the Secret too, so the caller can make sure it is watched.
func RootPassword(ctx context.Context, r SecretReader, c *v1alpha2.EtcdCluster) (string, *corev1.Secret, error) {
	name := c.Spec.Auth.RootCredentialsSecretRef.Name
	sec, err := r.Secret(ctx, c.Namespace, name)
	if err != nil {
		if isMissing(err) {
			return "", nil, &MissingError{Message: fmt.Sprintf("root credentials Secret %s/%s does not exist", c.Namespace, name)}
		}
		return "", nil, err
	}
	pw := sec.Data[corev1.BasicAuthPasswordKey]
	if len(pw) == 0 {
		return "", sec, &MissingError{Message: fmt.Sprintf("root credentials Secret %s/%s has no (or an empty) %q key",
			c.Namespace, name, corev1.BasicAuthPasswordKey)}
	}
	return string(pw), sec, nil
}

// Operator is the operator's own credential and what it knows of root's password.
type Operator struct {
	Username, Password string
	// RootHash is Hash of the root password last applied; empty when unknown.
	RootHash string
}

// ReadOperator reads the owned Secret; ok is false when it does not exist or is incomplete.
func ReadOperator(ctx context.Context, r SecretReader, c *v1alpha2.EtcdCluster) (Operator, bool, error) {
	sec, err := r.Secret(ctx, c.Namespace, v1alpha2.OperatorAuthSecretName(c.Name))
	if err != nil {
		if isMissing(err) {
			return Operator{}, false, nil
		}
		return Operator{}, false, err
	}
	op := Operator{Username: string(sec.Data[KeyUsername]), Password: string(sec.Data[KeyPassword]), RootHash: string(sec.Data[KeyRootHash])}
	return op, op.Username != "" && op.Password != "", nil
}

// Credentials is who the operator dials a cluster with auth on as: its own user, or root when
// the owned Secret is gone (see RootCredentials). (Until auth has latched, it dials anonymously.)
func Credentials(ctx context.Context, r SecretReader, c *v1alpha2.EtcdCluster) (user, password string, err error) {
	op, ok, err := ReadOperator(ctx, r, c)
	if err != nil {
		return "", "", err
	}
	if ok {
		return op.Username, op.Password, nil
	}
	return RootCredentials(ctx, r, c)
}

// RootCredentials is root and its password from the spec's Secret; for a passwordless root,
// no username at all: etcd then takes the client certificate's CN (root) for the user.
func RootCredentials(ctx context.Context, r SecretReader, c *v1alpha2.EtcdCluster) (user, password string, err error) {
	if Passwordless(c) {
		return "", "", nil
	}
	if c.Spec.Auth == nil || c.Spec.Auth.RootCredentialsSecretRef == nil {
		return "", "", &MissingError{Message: "etcd has auth enabled but spec.auth.rootCredentialsSecretRef is not set"}
	}
	pw, _, err := RootPassword(ctx, r, c)
	return v1alpha2.RootUser, pw, err
}

// Hash is the salted SHA-256 of a password, salted with the cluster's UID so equal passwords
// of two clusters do not hash alike. It is only ever compared, never reversed.
func Hash(c *v1alpha2.EtcdCluster, password string) string {
	sum := sha256.Sum256([]byte(string(c.UID) + "\x00" + password))
	return hex.EncodeToString(sum[:])
}

func isMissing(err error) bool {
	var missing *tlsmaterial.MissingSecretError
	return errors.As(err, &missing) || apierrors.IsNotFound(err)
}

// NewPassword is a random 32-byte password, hex-encoded.
func NewPassword() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b)
}

// OperatorSecretData is the owned Secret's data.
func OperatorSecretData(op Operator) map[string][]byte {
	return map[string][]byte{KeyUsername: []byte(op.Username), KeyPassword: []byte(op.Password), KeyRootHash: []byte(op.RootHash)}
}
