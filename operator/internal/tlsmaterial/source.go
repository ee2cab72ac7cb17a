// Package tlsmaterial reads a cluster's TLS Secrets for the controllers: the *tls.Config the
// operator dials etcd with, and the check that a member's certificates cover it before its Pod
// starts. Secrets are read through a cache restricted to Secrets carrying the cluster label
// (the ones cert-manager writes for the operator's Certificates), falling back to direct API
// reads for bring-your-own Secrets, so the operator never caches every Secret of the cluster.
package tlsmaterial

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/pki"
)

// CacheByObject restricts the manager's Secret and ConfigMap caches (and so every watch of
// them) to objects labelled with a cluster. Every manager running the controllers must use it:
// without it, the first Secret read or watch would cache all Secrets of the watched namespaces.
func CacheByObject() map[client.Object]cache.ByObject {
	req, err := labels.NewRequirement(v1alpha2.LabelCluster, selection.Exists, nil)
	if err != nil {
		panic(err) // a constant key; cannot fail
	}
	sel := labels.NewSelector().Add(*req)
	return map[client.Object]cache.ByObject{&corev1.Secret{}: {Label: sel}, &corev1.ConfigMap{}: {Label: sel}}
}

// Source reads TLS Secrets and keeps one *tls.Config per cluster until a Secret it was built
// from changes. One Source must be shared by both controllers: the etcd client Pool rebuilds
// a cluster's client whenever the tls.Config pointer differs from the last one it saw.
type Source struct {
	cached client.Reader
	api    client.Reader

	mu      sync.Mutex
	configs map[string]builtConfig
}

type builtConfig struct {
	version string
	cfg     *tls.Config
}

// NewSource reads through cached (the label-selected cache) and, for Secrets the cache does
// not hold, through api (the manager's API reader); api may be nil.
func NewSource(cached, api client.Reader) *Source {
	return &Source{cached: cached, api: api, configs: map[string]builtConfig{}}
}

// MissingSecretError is a referenced Secret that does not exist (yet: cert-manager may not
// have issued it), or TLS material the operator derives from such Secrets (Pending says which).
type MissingSecretError struct{ Namespace, Name, Pending string }

func (e *MissingSecretError) Error() string {
	if e.Pending != "" {
		return e.Pending
	}
	return fmt.Sprintf("Secret %s/%s does not exist yet", e.Namespace, e.Name)
}

// Secret reads a Secret: from the cache when it carries the cluster label, else directly.
func (s *Source) Secret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	key := client.ObjectKey{Namespace: namespace, Name: name}
	sec := &corev1.Secret{}
	err := s.cached.Get(ctx, key, sec)
	if apierrors.IsNotFound(err) && s.api != nil {
		err = s.api.Get(ctx, key, sec)
	}
	if apierrors.IsNotFound(err) {
		return nil, &MissingSecretError{Namespace: namespace, Name: name}
	}
	return sec, err
}

// ClientConfig is the TLS configuration the operator dials the cluster's members with, or nil
// when the client plane is plaintext. It trusts the client plane's trust bundle (the active
// server Secret's ca.crt) and, under mTLS, presents the active operator-client key pair: the
// copies the members follow, so the operator never presents a certificate they do not trust
// yet. The same pointer is returned until one of those Secrets changes (by resourceVersion).
func (s *Source) ClientConfig(ctx context.Context, c *v1alpha2.EtcdCluster) (*tls.Config, error) {
	server, cl, err := s.clientSecrets(ctx, c)
	if server == nil || err != nil {
		return nil, err
	}
	version := server.Name + "@" + server.ResourceVersion
	var clientData map[string][]byte
	if cl != nil {
		clientData = cl.Data
		version += "," + cl.Name + "@" + cl.ResourceVersion
	}
	key := c.Namespace + "/" + c.Name
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := s.configs[key]; ok && b.version == version {
		return b.cfg, nil
	}
	cfg, err := BuildClientConfig(server.Data, clientData)
	if err != nil {
		return nil, fmt.Errorf("TLS for cluster %s: %w", key, err)
	}
	s.configs[key] = builtConfig{version: version, cfg: cfg}
	return cfg, nil
}

// ClientPEM is ClientConfig's material as PEM, for a program that takes files (etcdctl).
type ClientPEM struct {
	// CA is the trust bundle; Cert and Key the client key pair (empty without client mTLS).
	CA, Cert, Key []byte
}

// ClientPEM is the material ClientConfig is built from, or nil when the plane is plaintext.
func (s *Source) ClientPEM(ctx context.Context, c *v1alpha2.EtcdCluster) (*ClientPEM, error) {
	server, cl, err := s.clientSecrets(ctx, c)
	if server == nil || err != nil {
		return nil, err
	}
	out := &ClientPEM{CA: server.Data[pki.KeyCA]}
	if cl != nil {
		out.Cert, out.Key = cl.Data[pki.KeyCert], cl.Data[pki.KeyKey]
	}
	return out, nil
}

// clientSecrets are the active server Secret (nil: plaintext) and, under client mTLS, the active
// operator-client Secret.
func (s *Source) clientSecrets(ctx context.Context, c *v1alpha2.EtcdCluster) (server, cl *corev1.Secret, err error) {
	names := pki.SecretsOf(c)
	if names.Server == "" {
		return nil, nil, nil
	}
	if server, err = s.Secret(ctx, c.Namespace, v1alpha2.ActiveServerSecretName(c.Name)); err != nil {
		return nil, nil, err
	}
	if names.OperatorClient != "" {
		if cl, err = s.Secret(ctx, c.Namespace, v1alpha2.ActiveOperatorClientSecretName(c.Name)); err != nil {
			return nil, nil, err
		}
	}
	return server, cl, nil
}

// Forget drops a cluster's cached configuration (the cluster is gone).
func (s *Source) Forget(namespace, cluster string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.configs, namespace+"/"+cluster)
}

// BuildClientConfig builds a client configuration from a server Secret's data (its ca.crt is
// the trust anchor) and, when clientData is not nil, the operator-client Secret's key pair.
// Server names are left to the dialler: gRPC verifies each member against its own host name.
func BuildClientConfig(serverData, clientData map[string][]byte) (*tls.Config, error) {
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(serverData[pki.KeyCA]) {
		return nil, fmt.Errorf("server Secret's %s holds no PEM certificate to trust", pki.KeyCA)
	}
	cfg := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	if clientData != nil {
		pair, err := tls.X509KeyPair(clientData[pki.KeyCert], clientData[pki.KeyKey])
		if err != nil {
			return nil, fmt.Errorf("operator-client Secret: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}
