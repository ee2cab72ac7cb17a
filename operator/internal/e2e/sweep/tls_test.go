//go:build e2e

package sweep

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
	"github.com/cozystack/etcd-operator/operator/internal/etcd"
	"github.com/cozystack/etcd-operator/operator/internal/pki"
	"github.com/cozystack/etcd-operator/operator/internal/pki/pkitest"
	"github.com/cozystack/etcd-operator/operator/internal/resources"
	"github.com/cozystack/etcd-operator/operator/internal/trust"
)

const (
	serverSecret = "sweep-server"
	rootSecret   = "sweep-root"
	rootPassword = "sweep-root-password"
)

// tlsState is what the TLS scenarios keep: the CA the server Secret's certificate is issued by
// now, and the clients they read etcd with.
type tlsState struct {
	ca  *pkitest.CA
	cfg *tls.Config
	// cli is the client of the current pass; a new one replaces it when auth changes what works.
	cli *clientv3.Client
}

// byoTLS: a cluster of n members serving client TLS from a bring-your-own server Secret, with
// a root credentials Secret ready for auth; the test's client follows the operator's active
// trust bundle, so it keeps working through a CA rotation.
func byoTLS(n int32) func(t *testing.T, s *sweep) *subject {
	return func(t *testing.T, s *sweep) *subject {
		sub := newSubject(t, s, n)
		st := &tlsState{ca: e2eutil.CreateServerSecret(t, s.c, sub.ns, serverSecret, sub.name),
			cfg: e2eutil.FollowingTLSConfig(t, s.c, sub.ns, sub.name)}
		sub.state = st
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: rootSecret, Namespace: sub.ns}, Type: corev1.SecretTypeBasicAuth,
			StringData: map[string]string{corev1.BasicAuthUsernameKey: v1alpha2.RootUser, corev1.BasicAuthPasswordKey: rootPassword}}
		if err := s.c.Client.Create(context.Background(), secret); err != nil {
			t.Fatal(err)
		}
		e2eutil.CreateCluster(t, s.c, sub.ns, sub.name, n, func(spec *v1alpha2.EtcdClusterSpec) {
			spec.TLS = &v1alpha2.TLSSpec{Client: &v1alpha2.ClientTLS{ServerSecretRef: &corev1.LocalObjectReference{Name: serverSecret}}}
		})
		sub.client = st.client(s, sub)
		t.Cleanup(func() { st.swap(nil) })
		e2eutil.WaitFor(t, setupTimeout, "the TLS cluster converged", func() bool { return converged(t, s, sub) == nil })
		return sub
	}
}

// client dials anonymously until auth is latched, then as root; a client is kept until it is
// refused, since building one is a TLS handshake and (with auth) a login.
func (st *tlsState) client(s *sweep, sub *subject) func(t *testing.T) (*clientv3.Client, error) {
	return func(t *testing.T) (*clientv3.Client, error) {
		user, password := "", ""
		if e2eutil.GetCluster(t, s.c, sub.ns, sub.name).Status.AuthEnabled {
			user, password = v1alpha2.RootUser, rootPassword
		}
		if st.cli != nil && st.cli.Username == user {
			return st.cli, nil
		}
		conf := e2eutil.ClientConfig(s.c, "https://"+v1alpha2.ClientServiceName(sub.name, nil)+"."+sub.ns+".svc:2379")
		conf.TLS, conf.Username, conf.Password = st.cfg, user, password
		cli, err := clientv3.New(conf)
		if err != nil {
			return nil, err
		}
		st.swap(cli)
		return cli, nil
	}
}

func (st *tlsState) swap(cli *clientv3.Client) {
	if st.cli != nil {
		_ = st.cli.Close()
	}
	st.cli = cli
}

// rotateCA replaces the server Secret with a certificate of a new CA (what a user or an
// external issuer does): the operator widens, swaps and narrows the trust.
func rotateCA(t *testing.T, s *sweep, sub *subject) {
	st := sub.state.(*tlsState)
	sub.gen++
	st.ca = pkitest.NewCA(t, fmt.Sprintf("%s-ca-%d", serverSecret, sub.gen))
	all := pki.ServerNames(pki.ClusterRef{Name: sub.name, Namespace: sub.ns, ClusterDomain: s.c.ClusterDomain()})
	e2eutil.SetSecretData(t, s.c, sub.ns, serverSecret, st.ca.SecretData(t, all.DNS, all.IPs, pkitest.ServerAndClient...))
}

// rotated: converged, no rollout left, the active server Secret serves a leaf of the new CA and
// trusts it alone, and every member's Pod mounts a bundle of the new CA alone.
func rotated(t *testing.T, s *sweep, sub *subject) error {
	if err := converged(t, s, sub); err != nil {
		return err
	}
	if r := e2eutil.GetCluster(t, s.c, sub.ns, sub.name).Status.Rollout; r != nil {
		return fmt.Errorf("rollout in progress: %d/%d updated", r.UpdatedMembers, r.Members)
	}
	want := trust.Merge(nil, sub.state.(*tlsState).ca.PEM)
	active := e2eutil.SecretData(t, s.c, sub.ns, v1alpha2.ActiveServerSecretName(sub.name))
	if !bytes.Equal(active[pki.KeyCA], want) || !trust.Verifies(want, active[pki.KeyCert], time.Now()) {
		return errors.New("the active server Secret does not serve and trust the new CA alone")
	}
	for _, m := range e2eutil.Members(t, s.c, sub.ns, sub.name) {
		if err := mountsOnly(t, s, sub.ns, m.Name, want); err != nil {
			return err
		}
	}
	return nil
}

// mountsOnly: the member's Pod mounts a trust bundle whose client CA is want.
func mountsOnly(t *testing.T, s *sweep, ns, member string, want []byte) error {
	pod := e2eutil.Pod(t, s.c, ns, member)
	if pod == nil {
		return fmt.Errorf("member %s has no Pod", member)
	}
	for _, v := range pod.Spec.Volumes {
		if v.Name != resources.TrustVolume || v.ConfigMap == nil {
			continue
		}
		cm := &corev1.ConfigMap{}
		if err := s.c.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: v.ConfigMap.Name}, cm); err != nil {
			return err
		}
		if cm.Data[resources.TrustKeyClientCA] != string(want) {
			return fmt.Errorf("Pod %s mounts bundle %s, not the new CA alone", pod.Name, cm.Name)
		}
		return nil
	}
	return fmt.Errorf("Pod %s mounts no trust bundle", pod.Name)
}

func enableAuth(t *testing.T, s *sweep, sub *subject) {
	ec := e2eutil.GetCluster(t, s.c, sub.ns, sub.name)
	patch := client.MergeFrom(ec.DeepCopy())
	ec.Spec.Auth = &v1alpha2.AuthSpec{Enabled: true, RootCredentialsSecretRef: &corev1.LocalObjectReference{Name: rootSecret}}
	if err := s.c.Client.Patch(context.Background(), ec, patch); err != nil {
		t.Fatal(err)
	}
}

// authOn: auth is latched in status, etcd refuses an anonymous write, and the cluster is
// converged as root sees it.
func authOn(t *testing.T, s *sweep, sub *subject) error {
	if !e2eutil.GetCluster(t, s.c, sub.ns, sub.name).Status.AuthEnabled {
		return errors.New("status.authEnabled is not set")
	}
	if err := converged(t, s, sub); err != nil {
		return err
	}
	conf := e2eutil.ClientConfig(s.c, "https://"+v1alpha2.ClientServiceName(sub.name, nil)+"."+sub.ns+".svc:2379")
	conf.TLS = sub.state.(*tlsState).cfg
	anon, err := clientv3.New(conf)
	if err != nil {
		return err
	}
	defer anon.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := anon.Put(ctx, "anonymous", "write"); !etcd.IsAuthRequired(err) {
		return fmt.Errorf("an anonymous write was not refused for want of credentials: %v", err)
	}
	return nil
}
