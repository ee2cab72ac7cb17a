//go:build e2e

package migrate

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
	"github.com/cozystack/etcd-operator/operator/internal/migrate/legacy"
	"github.com/cozystack/etcd-operator/operator/internal/pki"
	"github.com/cozystack/etcd-operator/operator/internal/pki/pkitest"
)

// testPeersOffAutoTLS: the adopted auto-TLS cluster's peers are moved to certificates of a CA
// (spec.tls.peer.secretRef) under a writer. No Pod ever verifies its peers while another still
// presents a self-signed certificate, the members that verify logged no refused peer, no
// acknowledged write is lost, and the member IDs stay.
func testPeersOffAutoTLS(t *testing.T, c *framework.Cluster, a adopted) {
	ns, name := a.l.Namespace, a.l.Name
	names := pki.ServerNames(pki.ClusterRef{Name: name, Namespace: ns, ClusterDomain: c.ClusterDomain(),
		Layout: &v1alpha2.Layout{HeadlessServiceName: legacy.HeadlessServiceName(a.l), ClientServiceName: legacy.ClientServiceName(a.l)}})
	e2eutil.CreateTLSSecret(t, c, ns, name+"-peer", pkitest.NewCA(t, name+"-peer-ca").SecretData(t, names.DNS, names.IPs, pkitest.ServerAndClient...))
	a.cli = clientOf(t, c, a.l, a.tls)
	w := e2eutil.StartWriter(a.cli, name+"-peers")
	ec := e2eutil.GetCluster(t, c, ns, name)
	patch := client.MergeFrom(ec.DeepCopy())
	ec.Spec.TLS.Peer = &v1alpha2.PeerTLS{SecretRef: &corev1.LocalObjectReference{Name: name + "-peer"}}
	if err := c.Client.Patch(context.Background(), ec, patch); err != nil {
		t.Fatal(err)
	}
	presented := map[string]bool{}
	took := e2eutil.WaitFor(t, 2*convergeTimeout, "every member verifying its peers", func() bool {
		modes := podPeerModes(t, c, ns, name)
		verifying := 0
		for member, mode := range modes {
			presented[member] = presented[member] || mode == "presenting"
			if mode == "verifying" {
				verifying++
			}
		}
		if verifying > 0 && slices.Contains(mapValues(modes), "auto") {
			t.Fatalf("a member verifies its peers while another presents a self-signed certificate: %v", modes)
		}
		return verifying == len(a.ids) && !e2eutil.GetCluster(t, c, ns, name).Status.PeerAutoTLS &&
			e2eutil.ConvergedWith(t, c, ns, name, len(a.ids), a.cli)
	})
	t.Logf("peers moved off auto-TLS in %s; members seen presenting the certificate on auto-TLS: %v", took.Round(time.Millisecond), presented)
	if len(presented) != len(a.ids) {
		t.Errorf("members seen presenting the certificate: %v, want all %d", presented, len(a.ids))
	}
	for _, m := range e2eutil.Members(t, c, ns, name) {
		logs, err := c.Kube.CoreV1().Pods(ns).GetLogs(m.Name, &corev1.PodLogOptions{Container: "etcd"}).DoRaw(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(logs), "rejected connection on peer endpoint"); n > 0 {
			t.Errorf("member %s refused a peer %d times while peers moved off auto-TLS", m.Name, n)
		}
	}
	if got := memberIDs(t, a.cli); !equalIDs(got, a.ids) {
		t.Errorf("member IDs %v, were %v", got, a.ids)
	}
	acked, failed, last := w.Stop()
	t.Logf("writes while peers moved: %d acknowledged, %d failed attempts (retried; last %v)", acked, failed, last)
	e2eutil.VerifyWrites(t, a.cli, name+"-peers", acked)
}

// podPeerModes: each member Pod's peer mode from its etcd flags and init containers.
func podPeerModes(t *testing.T, c *framework.Cluster, ns, name string) map[string]string {
	out := map[string]string{}
	for _, m := range e2eutil.Members(t, c, ns, name) {
		p := &corev1.Pod{}
		if err := c.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: m.Name}, p); err != nil {
			continue // being recreated
		}
		flags := p.Spec.Containers[0].Command
		fixtures := slices.ContainsFunc(p.Spec.InitContainers, func(c corev1.Container) bool { return c.Name == v1alpha2.PeerFixturesContainer })
		switch {
		case slices.Contains(flags, "--peer-client-cert-auth=true"):
			out[m.Name] = "verifying"
		case slices.Contains(flags, "--peer-auto-tls") && fixtures:
			out[m.Name] = "presenting"
		case slices.Contains(flags, "--peer-auto-tls"):
			out[m.Name] = "auto"
		}
	}
	return out
}

func mapValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
