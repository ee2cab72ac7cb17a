package lifecycle

import (
	"bytes"
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/pki"
	"github.com/cozystack/etcd-operator/operator/internal/pki/pkitest"
)

// memberPod is what a restart, a rollout or a kubelet sync would change of a member Pod.
type memberPod struct{ uid, revision, tlsHash string }

func memberPods(t *testing.T, ns string) map[string]memberPod {
	t.Helper()
	var pods corev1.PodList
	if err := k8s.List(context.Background(), &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	out := map[string]memberPod{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp.IsZero() {
			out[p.Name] = memberPod{string(p.UID), p.Annotations[v1alpha2.AnnotationPodRevision], p.Annotations[v1alpha2.AnnotationTLSHash]}
		}
	}
	return out
}

// A leaf renewed by the trusted CA changes the TLS hash annotation of every member Pod (which has a
// real kubelet rewrite their Secret volumes at once) and nothing else: the same Pods, with the same
// revisions, and the member controller's later passes keep the new value.
func TestRenewalAnnotatesPodsWithoutRestart(t *testing.T) {
	ns := newNamespace(t)
	ca := pkitest.NewCA(t, "ca")
	createRotCluster(t, ns, issueBYO(t, ns, ca))
	before := memberPods(t, ns)
	for name, p := range before {
		if p.tlsHash == "" {
			t.Fatalf("Pod %s has no %s annotation", name, v1alpha2.AnnotationTLSHash)
		}
	}

	renewed := issueBYO(t, ns, ca).server
	setSecretData(t, ns, "rot-server", renewed)
	waitFor(t, ns, "every member Pod annotated with the renewed Secret's hash", func() bool {
		if !bytes.Equal(activeData(t, ns, v1alpha2.ActiveServerSecretName("rot"))[pki.KeyCert], renewed[pki.KeyCert]) {
			return false
		}
		after := memberPods(t, ns)
		for name, p := range before {
			if after[name].tlsHash == p.tlsHash {
				return false
			}
		}
		return true
	})
	annotated := memberPods(t, ns)
	for name, p := range before {
		if a := annotated[name]; a.uid != p.uid || a.revision != p.revision {
			t.Errorf("Pod %s: uid %s revision %s before the renewal, uid %s revision %s after: restarted or rolled", name, p.uid, p.revision, a.uid, a.revision)
		}
	}
	if len(annotated) != len(before) {
		t.Errorf("member Pods %v before the renewal, %v after", before, annotated)
	}
	waitFor(t, ns, "the cluster converged again", converged(t, ns, "rot", 3))
	for name, p := range memberPods(t, ns) {
		if p != annotated[name] {
			t.Errorf("Pod %s changed after the renewal was annotated: %+v -> %+v", name, annotated[name], p)
		}
	}
}
