//go:build e2e

package tls

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"math/big"
	"strconv"
	"testing"
	"time"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
)

// servingTimeout bounds the way of a renewed Secret to every member's listener: the node
// agent's watch (or, at worst, its 30 s resync) swaps the volume, and etcd loads the key pair
// at the next handshake.
const servingTimeout = time.Minute

// planeConfigs are the client configurations for both listeners: the client plane with the
// operator-client certificate, the peer plane with the peer certificate (peers are each
// other's clients).
func planeConfigs(t *testing.T, c *framework.Cluster, ns, cluster string) (client, peer *tls.Config) {
	t.Helper()
	return e2eutil.TLSConfig(t, c, ns, v1alpha2.ServerSecretName(cluster), v1alpha2.OperatorClientSecretName(cluster)),
		e2eutil.TLSConfig(t, c, ns, v1alpha2.PeerSecretName(cluster), v1alpha2.PeerSecretName(cluster))
}

// testLeafRenewal forces a renewal of the server certificate the way cmctl renew does (the
// Issuing condition on the Certificate's status, which cert-manager's issuing controller acts
// on) and proves the new leaf is served by every member with no Pod restarted.
func testLeafRenewal(t *testing.T, c *framework.Cluster, ns, cluster string) {
	before := e2eutil.PodIdentities(t, c, ns, cluster)
	secret := v1alpha2.ServerSecretName(cluster)
	old := e2eutil.LeafSerial(t, c, ns, secret)
	start := time.Now()
	e2eutil.TriggerRenewal(t, c, ns, v1alpha2.ServerCertificateName(cluster))
	var renewed *big.Int
	issued := e2eutil.WaitFor(t, issueTimeout, "a renewed server certificate", func() bool {
		renewed = e2eutil.LeafSerial(t, c, ns, secret)
		return renewed.Cmp(old) != 0
	})
	clientCfg, _ := planeConfigs(t, c, ns, cluster)
	renewed, served := e2eutil.WaitServed(t, c, ns, cluster, servingTimeout, v1alpha2.ClientPort, clientCfg, secret)
	t.Logf("leaf renewal: cert-manager re-issued in %s, every member served serial %x %s later (%s in all)",
		issued.Round(time.Millisecond), renewed, served.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	e2eutil.AssertNoRestart(t, c, ns, cluster, before)
	e2eutil.WaitConvergedTLS(t, c, ns, cluster, len(before), clientCfg, convergeTimeout)
}

// testTemplateEdit changes spec.tls.certificateTemplate on the running cluster (RSA keys, a
// shorter lifetime): the operator updates its three Certificates, cert-manager re-issues them,
// and both listeners of every member serve the new RSA leaves, again without a restart.
func testTemplateEdit(t *testing.T, c *framework.Cluster, ns, cluster string) {
	before := e2eutil.PodIdentities(t, c, ns, cluster)
	secrets := []string{v1alpha2.ServerSecretName(cluster), v1alpha2.OperatorClientSecretName(cluster), v1alpha2.PeerSecretName(cluster)}
	old := map[string]*big.Int{}
	for _, s := range secrets {
		old[s] = e2eutil.LeafSerial(t, c, ns, s)
	}
	ec := e2eutil.GetCluster(t, c, ns, cluster)
	patch := client.MergeFrom(ec.DeepCopy())
	ec.Spec.TLS.CertificateTemplate = &v1alpha2.CertificateTemplate{
		Duration:    &metav1.Duration{Duration: 720 * time.Hour},
		RenewBefore: &metav1.Duration{Duration: 240 * time.Hour},
		PrivateKey:  &v1alpha2.PrivateKeyTemplate{Algorithm: v1alpha2.PrivateKeyRSA, Size: 2048},
	}
	start := time.Now()
	if err := c.Client.Patch(context.Background(), ec, patch); err != nil {
		t.Fatalf("certificateTemplate edit refused: %v", err)
	}
	renewed := map[string]*big.Int{}
	issued := e2eutil.WaitFor(t, issueTimeout, "the 3 Certificates re-issued after the template edit", func() bool {
		for _, s := range secrets {
			renewed[s] = e2eutil.LeafSerial(t, c, ns, s)
			if renewed[s].Cmp(old[s]) == 0 {
				return false
			}
		}
		return true
	})
	clientCfg, peerCfg := planeConfigs(t, c, ns, cluster)
	_, servedClient := e2eutil.WaitServed(t, c, ns, cluster, servingTimeout, v1alpha2.ClientPort, clientCfg, v1alpha2.ServerSecretName(cluster))
	_, servedPeer := e2eutil.WaitServed(t, c, ns, cluster, servingTimeout, v1alpha2.PeerPort, peerCfg, v1alpha2.PeerSecretName(cluster))
	t.Logf("template edit: 3 Certificates re-issued in %s; client plane served the new leaf %s later, peer plane %s after that (%s in all)",
		issued.Round(time.Millisecond), servedClient.Round(time.Millisecond), servedPeer.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	m := e2eutil.Members(t, c, ns, cluster)[0]
	leaf, err := e2eutil.Served(c, e2eutil.Pod(t, c, ns, m.Name), v1alpha2.MemberHost(m.Name, cluster, ns), v1alpha2.ClientPort, clientCfg)
	if err != nil {
		t.Fatal(err)
	}
	if leaf.PublicKeyAlgorithm != x509.RSA || leaf.NotAfter.Sub(leaf.NotBefore) != 720*time.Hour {
		t.Errorf("served leaf: %s key, lifetime %s; want RSA and 720h", leaf.PublicKeyAlgorithm, leaf.NotAfter.Sub(leaf.NotBefore))
	}
	var cert cmapi.Certificate
	if err := c.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: v1alpha2.PeerCertificateName(cluster)}, &cert); err != nil {
		t.Fatal(err)
	}
	if cert.Spec.PrivateKey.Algorithm != cmapi.RSAKeyAlgorithm || cert.Spec.Duration.Duration != 720*time.Hour {
		t.Errorf("peer Certificate spec: %+v %v", cert.Spec.PrivateKey, cert.Spec.Duration)
	}
	e2eutil.AssertNoRestart(t, c, ns, cluster, before)
	e2eutil.WaitConvergedTLS(t, c, ns, cluster, len(before), clientCfg, convergeTimeout)
}

// testScaleWithTLS scales the full-mTLS cluster 3→5→3: the new members join over peer mTLS
// with the renewed certificates, and the client keeps writing and reading.
func testScaleWithTLS(t *testing.T, c *framework.Cluster, ns, cluster string) {
	clientCfg, _ := planeConfigs(t, c, ns, cluster)
	for i, n := range []int32{5, 3} {
		e2eutil.Scale(t, c, ns, cluster, n)
		took := e2eutil.WaitConvergedTLS(t, c, ns, cluster, int(n), clientCfg, convergeTimeout)
		t.Logf("scaled to %d with full mTLS in %s", n, took.Round(time.Millisecond))
		cli := e2eutil.TLSEtcdClient(t, c, ns, cluster, clientCfg)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		key := fmt.Sprintf("scale-%d", i)
		if _, err := cli.Put(ctx, key, strconv.Itoa(int(n))); err != nil {
			cancel()
			t.Fatalf("put at %d members: %v", n, err)
		}
		resp, err := cli.Get(ctx, key)
		cancel()
		if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != strconv.Itoa(int(n)) {
			t.Fatalf("get at %d members: %v %v", n, err, resp)
		}
	}
	_, peerCfg := planeConfigs(t, c, ns, cluster)
	e2eutil.WaitServed(t, c, ns, cluster, servingTimeout, v1alpha2.PeerPort, peerCfg, v1alpha2.PeerSecretName(cluster))
}

// testMemberReplaced deletes a follower's EtcdMember: the operator removes it from etcd and adds
// a member under a new name, which the certificates cover through the member wildcard, so it
// joins over peer mTLS without any certificate being re-issued.
func testMemberReplaced(t *testing.T, c *framework.Cluster, ns, cluster string) {
	clientCfg, _ := planeConfigs(t, c, ns, cluster)
	before := map[string]bool{}
	var victim *v1alpha2.EtcdMember
	leader := e2eutil.GetCluster(t, c, ns, cluster).Status.LeaderID
	for _, m := range e2eutil.Members(t, c, ns, cluster) {
		before[m.Name] = true
		if m.Status.MemberID != leader && victim == nil {
			victim = m.DeepCopy()
		}
	}
	serial := e2eutil.LeafSerial(t, c, ns, v1alpha2.ServerSecretName(cluster))
	start := time.Now()
	if err := c.Client.Delete(context.Background(), victim); err != nil {
		t.Fatal(err)
	}
	e2eutil.WaitFor(t, convergeTimeout, "a new member in place of "+victim.Name, func() bool {
		ms := e2eutil.Members(t, c, ns, cluster)
		fresh := 0
		for _, m := range ms {
			if m.Name == victim.Name {
				return false
			}
			if !before[m.Name] {
				fresh++
			}
		}
		return fresh == 1 && len(ms) == len(before)
	})
	e2eutil.WaitConvergedTLS(t, c, ns, cluster, len(before), clientCfg, convergeTimeout)
	t.Logf("member %s replaced; the cluster converged over mTLS %s after the deletion", victim.Name, time.Since(start).Round(time.Millisecond))
	if now := e2eutil.LeafSerial(t, c, ns, v1alpha2.ServerSecretName(cluster)); now.Cmp(serial) != 0 {
		t.Errorf("the server certificate was re-issued (%x -> %x); the wildcard should cover a new member", serial, now)
	}
}
