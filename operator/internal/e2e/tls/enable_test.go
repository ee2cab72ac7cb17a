//go:build e2e

package tls

import (
	"context"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
)

const (
	listenBoth = "--listen-client-urls=http://0.0.0.0:2379,https://0.0.0.0:2379"
	listenTLS  = "--listen-client-urls=https://0.0.0.0:2379"
)

// testEnableClientTLS adds client mTLS (cert-manager) to a running 3-member plaintext cluster
// while clients write continuously. A plaintext writer runs until the operator latches that
// every member serves TLS (the end of the phase in which members serve both on one port); a
// TLS writer with the operator-client certificate takes over from there, as clients migrating
// in that window would. No acknowledged write of either may be lost; failed attempts are
// reported. The operator is killed and restarted once in the middle of step 1: the change
// resumes from what the objects record. At the end every member serves TLS only and refuses
// plaintext.
func testEnableClientTLS(t *testing.T, c *framework.Cluster, op *e2eutil.Operator) {
	ns := e2eutil.NewNamespace(t, c)
	createCA(t, c, ns)
	e2eutil.CreateCluster(t, c, ns, "etcd", 3)
	e2eutil.WaitConverged(t, c, ns, "etcd", 3, convergeTimeout)
	plain := e2eutil.StartWriter(e2eutil.EtcdClient(t, c, ns, "etcd"), "plain")
	e2eutil.WaitFor(t, time.Minute, "the plaintext writer under way", func() bool { return plain.Acked() > 10 })

	ca := v1alpha2.IssuerReference{Name: "etcd-ca", Kind: "Issuer"}
	ec := e2eutil.GetCluster(t, c, ns, "etcd")
	patch := client.MergeFrom(ec.DeepCopy())
	ec.Spec.TLS = &v1alpha2.TLSSpec{Client: &v1alpha2.ClientTLS{
		CertManager: &v1alpha2.ClientCertManager{ServerIssuerRef: ca, OperatorClientIssuerRef: &ca}}}
	start := time.Now()
	if err := c.Client.Patch(context.Background(), ec, patch); err != nil {
		t.Fatalf("adding spec.tls.client to a running cluster refused: %v", err)
	}

	// Step 1: every member restarted into TLS beside plaintext; the operator latches. Once
	// the first member serves both, the operator is killed and started again. The Pods are
	// watched, not polled: the last member may serve both for less than a poll before the latch
	// lets step 2 restart it.
	var mu sync.Mutex
	servedBoth := map[string]bool{}
	e2eutil.WatchPods(t, c, ns, metav1.ListOptions{}, func(p *corev1.Pod) bool {
		if e2eutil.PodReady(p) && hasArg(p.Spec.Containers[0].Command, listenBoth) {
			mu.Lock()
			servedBoth[p.Name] = true
			mu.Unlock()
		}
		return false
	})
	seenBoth := func() map[string]bool {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(servedBoth)
	}
	killed := false
	step1 := e2eutil.WaitFor(t, convergeTimeout, "status.clientTLSServing", func() bool {
		if len(seenBoth()) >= 1 && !killed {
			if err := op.Kill(); err != nil {
				t.Fatal(err)
			}
			if err := op.Start(); err != nil {
				t.Fatal(err)
			}
			killed = true
		}
		return e2eutil.GetCluster(t, c, ns, "etcd").Status.ClientTLSServing
	})
	if !killed {
		t.Error("the operator was not restarted during step 1")
	}
	cfg := e2eutil.TLSConfig(t, c, ns, v1alpha2.ServerSecretName("etcd"), v1alpha2.OperatorClientSecretName("etcd"))
	tlsCli := e2eutil.TLSEtcdClient(t, c, ns, "etcd", cfg)
	secure := e2eutil.StartWriter(tlsCli, "tls")
	plainAcked, plainFailed, plainErrs := plain.Stop()

	// Step 2: members restarted once more, without the plaintext listener.
	step2 := e2eutil.WaitFor(t, convergeTimeout, "every member serving TLS only", func() bool {
		for _, m := range e2eutil.Members(t, c, ns, "etcd") {
			if p := e2eutil.Pod(t, c, ns, m.Name); p == nil || !e2eutil.PodReady(p) || !hasArg(p.Spec.Containers[0].Command, listenTLS) {
				return false
			}
		}
		return e2eutil.GetCluster(t, c, ns, "etcd").Status.Rollout == nil
	})
	e2eutil.WaitConvergedTLS(t, c, ns, "etcd", 3, cfg, convergeTimeout)
	took := time.Since(start)
	if both := seenBoth(); len(both) != 3 { // each was ready with both well before step 2 ended
		t.Errorf("members seen ready with TLS beside plaintext: %v, want all 3", both)
	}
	converged := secure.Acked()
	e2eutil.WaitFor(t, time.Minute, "TLS writes after the last restart", func() bool { return secure.Acked() > converged+10 })
	tlsAcked, tlsFailed, tlsErrs := secure.Stop()

	for _, m := range e2eutil.Members(t, c, ns, "etcd") {
		host := v1alpha2.MemberHost(m.Name, "etcd", ns)
		if _, err := e2eutil.Served(c, e2eutil.Pod(t, c, ns, m.Name), host, v1alpha2.ClientPort, cfg); err != nil {
			t.Errorf("member %s: TLS handshake on the client port: %v", m.Name, err)
		}
		if err := plaintextPut(c, host); err == nil {
			t.Errorf("member %s accepted a plaintext write after client TLS was enabled", m.Name)
		}
	}
	e2eutil.VerifyWrites(t, tlsCli, "plain", plainAcked)
	e2eutil.VerifyWrites(t, tlsCli, "tls", tlsAcked)
	for _, reason := range []string{v1alpha2.ReasonEnablingClientTLS, v1alpha2.ReasonClientTLSServing} {
		if e2eutil.FindEvent(t, c, ns, "etcd", reason) == nil {
			t.Errorf("no %s Event on the cluster", reason)
		}
	}
	t.Logf("client mTLS enabled on a running 3-member cluster in %s (step 1, TLS beside plaintext: %s; step 2, TLS only: %s)",
		took.Round(time.Millisecond), step1.Round(time.Millisecond), step2.Round(time.Millisecond))
	t.Logf("plaintext writer (until the latch): %d acknowledged, %d failed attempts %v", plainAcked, plainFailed, plainErrs)
	t.Logf("TLS writer (from the latch): %d acknowledged, %d failed attempts %v; no acknowledged write lost", tlsAcked, tlsFailed, tlsErrs)
}

func hasArg(args []string, want string) bool {
	for _, a := range args {
		if a == want {
			return true
		}
	}
	return false
}

// plaintextPut writes to one member in plaintext; it must fail once client TLS is on.
func plaintextPut(c *framework.Cluster, host string) error {
	cfg := e2eutil.ClientConfig(c, "http://"+host+":2379")
	cfg.DialTimeout = 2 * time.Second
	cli, err := clientv3.New(cfg)
	if err != nil {
		return err
	}
	defer func() { _ = cli.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_, err = cli.Put(ctx, "plaintext-after-tls", strings.Repeat("x", 1))
	return err
}
