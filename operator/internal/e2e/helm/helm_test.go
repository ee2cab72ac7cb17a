//go:build e2e

package helm

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/e2e/localcluster"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil/helmrelease"
)

var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = apiextensionsv1.AddToScheme(s)
	_ = v1alpha2.AddToScheme(s)
	return s
}()

func TestMain(m *testing.M) {
	bin, err := e2eutil.BuildOperatorBinary(localcluster.DefaultStateRoot)
	if err != nil {
		fmt.Fprintln(os.Stderr, "operator binary:", err)
		os.Exit(1)
	}
	framework.Main(m, framework.Options{OperatorBin: bin, Scheme: scheme})
}

// leaseName is the manager's default Lease (the chart leaves leaderElectionID empty), in the
// namespace of the operator's Pod (controller-runtime reads it from the ServiceAccount volume).
const leaseName = v1alpha2.DefaultLeaderElectionID

// TestHelmInstallUninstall is the charts' proof on a real cluster; each step needs the one before.
func TestHelmInstallUninstall(t *testing.T) {
	c := framework.Shared(t)
	s := &suite{c: c, op: helmrelease.New(t, c, operatorRelease, operatorNamespace), etcd: helmrelease.New(t, c, etcdRelease, etcdNamespace)}
	// The etcd chart's default TLS is a cert-manager PKI; the controller runs (CRDs installed)
	// until the test ends, past both uninstalls.
	framework.StartCertManager(t, c)
	steps := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"install operator chart", s.installOperator},
		{"install etcd chart", s.installEtcd},
		{"operator leader fails over", s.failOverLeader},
		{"deletion protection refuses a user, not the operator's scale-down", s.protectMembers},
		{"operator ran without RBAC denials or restarts", s.checkOperatorHealthy},
		{"uninstall etcd chart", s.uninstallEtcd},
		{"uninstall operator chart", s.uninstallOperator},
	}
	for _, step := range steps {
		if !t.Run(step.name, step.run) {
			s.dumpOperatorLogs(t)
			return
		}
	}
}

// suite is what the steps share.
type suite struct {
	c        *framework.Cluster
	op, etcd *helmrelease.Release
	// etcdTLS is a tenant's client of the etcd release: it trusts the chart's CA and presents
	// the chart's client certificate.
	etcdTLS *tls.Config
	// operatorLogs are the node agents' log files of the operator Pods' manager containers
	// (kept after the Pods are gone), by Pod name.
	operatorLogs map[string]string
}

// checkNewOperatorPods runs checkOperatorPod on the operator Pods not seen yet.
func (s *suite) checkNewOperatorPods(t *testing.T) {
	if s.operatorLogs == nil {
		s.operatorLogs = map[string]string{}
	}
	for _, p := range operatorPods(t, s.c) {
		if _, seen := s.operatorLogs[p.Name]; !seen && p.DeletionTimestamp == nil {
			s.operatorLogs[p.Name] = checkOperatorPod(t, s.c, p)
		}
	}
}

// installOperator installs charts/etcd-operator and waits for its Pods: Ready means the manager
// process runs in the Pod and answers the chart's /readyz probe; the Lease shows leader election
// works with the chart's RBAC and ServiceAccount token.
func (s *suite) installOperator(t *testing.T) {
	took := s.op.Install(t, chartDir(t, "etcd-operator"), operatorValues())
	t.Logf("helm install %s: %s", s.op.Name, took.Round(time.Millisecond))
	took = e2eutil.WaitSeen(t, 3*time.Minute, "the operator Deployment to have its Pods ready", func() (bool, string) {
		return e2eutil.DeploymentReady(s.c, operatorNamespace, operatorRelease, operatorReplicas)
	})
	t.Logf("operator Deployment ready (%d Pods): %s", operatorReplicas, took.Round(time.Millisecond))
	s.checkNewOperatorPods(t)
	took = e2eutil.WaitSeen(t, time.Minute, "a leader in Lease "+leaseName, func() (bool, string) {
		return e2eutil.LeaseHeldByPod(s.c, operatorNamespace, operatorPods(t, s.c))
	})
	t.Logf("Lease %s/%s held by an operator Pod: %s", operatorNamespace, leaseName, took.Round(time.Millisecond))
}

// installEtcd installs charts/etcd with its default TLS and waits for cert-manager to fill the
// chart's Secrets and for an Available 3-member cluster that serves a write and a linearizable
// read through its client Service over mutual TLS, and refuses a plaintext client and a TLS
// client without a certificate.
func (s *suite) installEtcd(t *testing.T) {
	took := s.etcd.Install(t, chartDir(t, "etcd"), etcdValues())
	t.Logf("helm install %s: %s", s.etcd.Name, took.Round(time.Millisecond))
	took = e2eutil.WaitSeen(t, 2*time.Minute, "cert-manager to issue the chart's Secrets", func() (bool, string) {
		return secretsExist(s.c, etcdNamespace, etcdServerSecret, etcdPeerSecret, etcdClientSecret)
	})
	t.Logf("Secrets %s, %s, %s issued: %s", etcdServerSecret, etcdPeerSecret, etcdClientSecret, took.Round(time.Millisecond))
	what := fmt.Sprintf("EtcdCluster %s/%s Available with %d ready members", etcdNamespace, etcdRelease, etcdReplicas)
	took = e2eutil.WaitSeen(t, 5*time.Minute, what, func() (bool, string) {
		return e2eutil.ClusterAvailable(s.c, etcdNamespace, etcdRelease, etcdReplicas)
	})
	t.Logf("%s: %s", what, took.Round(time.Millisecond))
	checkClusterObjects(t, s.c, etcdNamespace, etcdReplicas)
	s.etcdTLS = chartTLSConfig(t, s.c, etcdNamespace, etcdServerSecret, etcdClientSecret)
	took = putGet(t, s.c, etcdNamespace, etcdRelease, s.etcdTLS, "/e2e/helm", "installed by helm")
	t.Logf("put + linearizable get through Service %s-client over mTLS: %s", etcdRelease, took.Round(time.Millisecond))
	refused(t, s.c, clientEndpoint(s.c, "http", etcdNamespace, etcdRelease), nil, "a plaintext client")
	refused(t, s.c, clientEndpoint(s.c, "https", etcdNamespace, etcdRelease),
		chartTLSConfig(t, s.c, etcdNamespace, etcdServerSecret, ""), "a TLS client without a certificate")
}

// failOverLeader deletes the leader's Pod: the other replica must take the Lease (once it
// expires: the manager does not release it on shutdown), the Deployment must replace the Pod,
// and the cluster must still serve.
func (s *suite) failOverLeader(t *testing.T) {
	_, holder := e2eutil.LeaseHeldByPod(s.c, operatorNamespace, operatorPods(t, s.c))
	leader, _, _ := strings.Cut(holder, "_")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: leader}}
	if err := s.c.Client.Delete(context.Background(), pod); err != nil {
		t.Fatalf("delete leader Pod %q (Lease holder %q): %v", leader, holder, err)
	}
	took := e2eutil.WaitSeen(t, 2*time.Minute, "another operator Pod to take the Lease from "+leader, func() (bool, string) {
		ok, h := e2eutil.LeaseHeldByPod(s.c, operatorNamespace, operatorPods(t, s.c))
		return ok && !strings.HasPrefix(h, leader+"_"), h
	})
	t.Logf("leader Pod %s deleted; Lease taken by another Pod: %s", leader, took.Round(time.Millisecond))
	took = e2eutil.WaitSeen(t, 2*time.Minute, "the operator Deployment to replace the Pod", func() (bool, string) {
		return e2eutil.DeploymentReady(s.c, operatorNamespace, operatorRelease, operatorReplicas)
	})
	t.Logf("operator Deployment ready again: %s", took.Round(time.Millisecond))
	s.checkNewOperatorPods(t)
	if len(s.operatorLogs) != operatorReplicas+1 {
		t.Errorf("operator Pods seen: %v, want the %d first ones and one replacement", s.operatorLogs, operatorReplicas)
	}
	if ok, last := e2eutil.ClusterAvailable(s.c, etcdNamespace, etcdRelease, etcdReplicas); !ok {
		t.Errorf("EtcdCluster after the failover: %s", last)
	}
	putGet(t, s.c, etcdNamespace, etcdRelease, s.etcdTLS, "/e2e/helm/failover", "new leader")
}

// checkOperatorHealthy reads the operator Pods' logs for RBAC denials (a missing rule shows
// up there first: a reflector that may not list, an event that may not be written) and checks
// that no container restarted (the liveness probe held).
func (s *suite) checkOperatorHealthy(t *testing.T) {
	for _, path := range s.operatorLogs {
		for _, line := range forbiddenLines(t, path) {
			t.Errorf("%s: %s", path, line)
		}
	}
	for _, p := range operatorPods(t, s.c) {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.RestartCount != 0 {
				t.Errorf("Pod %s container %s restarted %d times", p.Name, cs.Name, cs.RestartCount)
			}
		}
	}
}

// uninstallEtcd removes the tenant release; the EtcdCluster's deletion cascades to members,
// Pods, PVCs (and their PVs), Services and the PDB, which must all go, as must the chart's
// Certificates and Issuers. (cert-manager leaves the Secrets it filled, as it does by default.)
func (s *suite) uninstallEtcd(t *testing.T) {
	took := s.etcd.Uninstall(t)
	t.Logf("helm uninstall %s: %s", s.etcd.Name, took.Round(time.Millisecond))
	took = e2eutil.WaitSeen(t, 3*time.Minute, "every object of EtcdCluster "+etcdRelease+" to be deleted", func() (bool, string) {
		left := clusterObjects(s.c, etcdNamespace)
		return len(left) == 0, fmt.Sprintf("left: %v", left)
	})
	t.Logf("EtcdCluster, EtcdMembers, Pods, PVCs, PVs, Services, PDB, Certificates and Issuers gone: %s", took.Round(time.Millisecond))
}

// uninstallOperator removes the operator release: its Deployment, Pods, RBAC, ServiceAccount
// and Service go; the CRDs (the chart's crds/) stay, as Helm never deletes them.
func (s *suite) uninstallOperator(t *testing.T) {
	took := s.op.Uninstall(t)
	t.Logf("helm uninstall %s: %s", s.op.Name, took.Round(time.Millisecond))
	took = e2eutil.WaitSeen(t, 2*time.Minute, "the operator release's objects to be deleted", func() (bool, string) {
		left := operatorObjects(s.c)
		return len(left) == 0, fmt.Sprintf("left: %v", left)
	})
	t.Logf("operator Deployment, Pods, ServiceAccount, RBAC and Service gone: %s", took.Round(time.Millisecond))
	for _, crd := range []string{"etcdclusters.etcd-operator.cozystack.io", "etcdmembers.etcd-operator.cozystack.io"} {
		if err := s.c.Client.Get(context.Background(), client.ObjectKey{Name: crd}, &apiextensionsv1.CustomResourceDefinition{}); err != nil {
			t.Errorf("CRD %s after helm uninstall: %v (want it kept)", crd, err)
		}
	}
}

// dumpOperatorLogs shows the end of each operator log after a failed step.
func (s *suite) dumpOperatorLogs(t *testing.T) {
	for _, path := range s.operatorLogs {
		t.Logf("%s, last lines:\n%s", path, logTail(path, 40))
	}
}
