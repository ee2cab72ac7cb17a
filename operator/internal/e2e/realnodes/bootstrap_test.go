//go:build e2e

package realnodes

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/internal/chartrender"
	"github.com/cozystack/etcd-operator/internal/ociimage"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil/helmrelease"
)

// restricted is the label that makes the API server refuse, in a namespace, any Pod that breaks
// the Restricted Pod Security Standard.
var restricted = map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}

// bootstrap installs both charts with their defaults into Restricted namespaces: the operator
// runs the image the chart names, built here and imported into the nodes, and holds the Lease;
// the tenant cluster becomes Available with 3 members whose etcd runs the built etcd image, and
// serves a write and a linearizable read through its client Service over mutual TLS.
func (s *suite) bootstrap(t *testing.T) {
	for _, ns := range []string{operatorNamespace, etcdNamespace} {
		s.createRestrictedNamespace(t, ns)
	}
	s.installOperator(t)
	s.installEtcd(t)
}

func (s *suite) createRestrictedNamespace(t *testing.T, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: restricted}}
	if err := s.c.Client.Create(context.Background(), ns); err != nil {
		t.Fatalf("namespace %s: %v", name, err)
	}
}

func (s *suite) installOperator(t *testing.T) {
	chart := helmrelease.RepoPath(t, "charts/etcd-operator")
	image := chartOperatorImage(t, chart)
	if built, err := ociimage.OperatorImage(chart); err != nil || built != image {
		t.Fatalf("make images names the operator image %q (%v); the chart installs %q", built, err, image)
	}
	s.operatorImage = image
	took := s.op.Install(t, chart, nil)
	t.Logf("helm install %s (no values): %s", s.op.Name, took.Round(time.Millisecond))
	took = e2eutil.WaitSeen(t, 3*time.Minute, "the operator Deployment ready", func() (bool, string) {
		return e2eutil.DeploymentReady(s.c, operatorNamespace, operatorRelease, 1)
	})
	t.Logf("operator Deployment ready: %s", took.Round(time.Millisecond))
	pods := s.operatorPods(t)
	for i := range pods {
		p := &pods[i]
		if got := p.Spec.Containers[0].Image; got != image {
			t.Errorf("operator Pod %s runs image %q, want the chart's %q", p.Name, got, image)
		}
		s.checkRanBuiltOperator(t, p, p.Spec.Containers[0].Name)
		s.checkRealNode(t, p.Spec.NodeName)
	}
	took = e2eutil.WaitSeen(t, time.Minute, "an operator Pod holding the leader Lease", func() (bool, string) {
		return e2eutil.LeaseHeldByPod(s.c, operatorNamespace, s.operatorPods(t))
	})
	t.Logf("leader Lease held by an operator Pod: %s", took.Round(time.Millisecond))
}

func (s *suite) operatorPods(t *testing.T) []corev1.Pod {
	t.Helper()
	pods, err := e2eutil.OperatorPods(s.c, operatorNamespace, operatorRelease)
	if err != nil {
		t.Fatal(err)
	}
	return pods
}

// chartOperatorImage is the image the operator chart's Deployment names with no values.
func chartOperatorImage(t *testing.T, chart string) string {
	t.Helper()
	objs, err := chartrender.Render(chart, nil, operatorNamespace)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetKind() != "Deployment" {
			continue
		}
		containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		if len(containers) > 0 {
			if image, ok := containers[0].(map[string]any)["image"].(string); ok {
				return image
			}
		}
	}
	t.Fatalf("chart %s renders no Deployment with a container image", chart)
	return ""
}

// checkRealNode fails unless the node is a real kubelet over containerd.
func (s *suite) checkRealNode(t *testing.T, name string) {
	t.Helper()
	var n corev1.Node
	if err := s.c.Client.Get(context.Background(), client.ObjectKey{Name: name}, &n); err != nil {
		t.Fatal(err)
	}
	if rt := n.Status.NodeInfo.ContainerRuntimeVersion; !strings.HasPrefix(rt, "containerd://") {
		t.Errorf("node %s runs %q, want containerd (kubelet %s)", name, rt, n.Status.NodeInfo.KubeletVersion)
	}
}

func (s *suite) installEtcd(t *testing.T) {
	took := s.etcd.Install(t, helmrelease.RepoPath(t, "charts/etcd"), nil)
	t.Logf("helm install %s (no values): %s", s.etcd.Name, took.Round(time.Millisecond))
	took = e2eutil.WaitSecret(t, s.c, etcdNamespace, etcdClientSecret, 2*time.Minute)
	t.Logf("cert-manager issued the chart's client Secret: %s", took.Round(time.Millisecond))
	took = s.waitAvailable(t, etcdReplicas, 5*time.Minute)
	t.Logf("EtcdCluster Available with %d members: %s", etcdReplicas, took.Round(time.Millisecond))
	s.clientTLS = e2eutil.TLSConfig(t, s.c, etcdNamespace, etcdServerSecret, etcdClientSecret)
	version := e2eutil.GetCluster(t, s.c, etcdNamespace, etcdRelease).Spec.Version
	for _, m := range e2eutil.Members(t, s.c, etcdNamespace, etcdRelease) {
		p := e2eutil.Pod(t, s.c, etcdNamespace, m.Name)
		checkRanBuiltEtcd(t, p, "etcd", version)
		s.checkRealNode(t, p.Spec.NodeName)
	}
	took = s.putGet(t, "/e2e/real/bootstrap", "installed")
	t.Logf("put + linearizable get through Service %s over mTLS: %s", v1alpha2.ClientServiceName(etcdRelease, nil), took.Round(time.Millisecond))
}

// waitAvailable waits until the tenant cluster is Available with n members and returns how long
// that took.
func (s *suite) waitAvailable(t *testing.T, n int, timeout time.Duration) time.Duration {
	t.Helper()
	return e2eutil.WaitSeen(t, timeout, fmt.Sprintf("EtcdCluster %s/%s Available with %d members", etcdNamespace, etcdRelease, n), func() (bool, string) {
		return e2eutil.ClusterAvailable(s.c, etcdNamespace, etcdRelease, n)
	})
}

// putGet writes key through the client Service and reads it back linearizably, retrying the
// write while the Service's endpoints catch up.
func (s *suite) putGet(t *testing.T, key, value string) time.Duration {
	t.Helper()
	start := time.Now()
	cli := e2eutil.TLSEtcdClient(t, s.c, etcdNamespace, etcdRelease, s.clientTLS)
	e2eutil.WaitNoError(t, time.Minute, "a write through the client Service", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := cli.Put(ctx, key, value)
		return err
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, key)
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != value {
		t.Fatalf("get %s: %v %v, want %q", key, err, resp, value)
	}
	return time.Since(start)
}
