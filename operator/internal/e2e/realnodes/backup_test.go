//go:build e2e

package realnodes

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil/helmrelease"
)

// The snapshot step's store, and the release the snapshot is restored into.
const (
	bucket          = "backups"
	s3CredsSecret   = "s3-credentials"
	snapshotName    = "real-s3"
	restoredRelease = "restored"
	snapshotTimeout = 3 * time.Minute
)

// snapshotRestore takes an EtcdSnapshot of the tenant cluster into S3 (the operator's agent Pod,
// from its own built image, streams it from a member over mTLS) and restores it into a new
// release of the tenant chart: the seed's init containers install the agent from the operator
// image and restore with the etcd image's etcdutl, and the restored cluster holds the key.
func (s *suite) snapshotRestore(t *testing.T) {
	store := framework.StartS3(t, s.c)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := store.CreateBucket(ctx, bucket); err != nil {
		t.Fatal(err)
	}
	creds := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: s3CredsSecret, Namespace: etcdNamespace}, StringData: map[string]string{
		"AWS_ACCESS_KEY_ID": store.Root.AccessKeyID, "AWS_SECRET_ACCESS_KEY": store.Root.SecretAccessKey}}
	if err := s.c.Client.Create(ctx, creds); err != nil {
		t.Fatal(err)
	}
	s.putGet(t, "/e2e/real/snapshot", "in the snapshot")
	agents := s.recordAgentPods(t)
	key := s.takeSnapshot(t, store.Endpoint)
	agents.check(t, s)
	s.restore(t, store.Endpoint, key)
}

// takeSnapshot creates the EtcdSnapshot, waits for it to complete and returns its object key.
func (s *suite) takeSnapshot(t *testing.T, endpoint string) string {
	t.Helper()
	snap := &v1alpha2.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Name: snapshotName, Namespace: etcdNamespace},
		Spec: v1alpha2.EtcdSnapshotSpec{ClusterRef: corev1.LocalObjectReference{Name: etcdRelease},
			Destination: v1alpha2.SnapshotLocation{S3: &v1alpha2.S3Location{Endpoint: endpoint, Bucket: bucket, Key: "real",
				ForcePathStyle: true, CredentialsSecretRef: corev1.LocalObjectReference{Name: s3CredsSecret}}}}}
	if err := s.c.Client.Create(context.Background(), snap); err != nil {
		t.Fatal(err)
	}
	took := e2eutil.WaitSeen(t, snapshotTimeout, "EtcdSnapshot "+snapshotName+" Complete", func() (bool, string) {
		if err := s.c.Client.Get(context.Background(), client.ObjectKeyFromObject(snap), snap); err != nil {
			return false, err.Error()
		}
		if snap.Status.Phase == v1alpha2.SnapshotFailed {
			t.Fatalf("EtcdSnapshot %s failed: %+v", snapshotName, meta.FindStatusCondition(snap.Status.Conditions, v1alpha2.ConditionReady))
		}
		return snap.Status.Phase == v1alpha2.SnapshotComplete && snap.Status.Artifact != nil, string(snap.Status.Phase)
	})
	t.Logf("EtcdSnapshot %s Complete in %s: %s", snapshotName, took.Round(time.Millisecond), snap.Status.Artifact.URI)
	return strings.TrimPrefix(snap.Status.Artifact.URI, "s3://"+bucket+"/")
}

// restore installs the tenant chart again as restoredRelease, one member of the source's etcd
// version (etcd never restores a snapshot into an older one) seeded from the snapshot's object,
// and reads the key back from it.
func (s *suite) restore(t *testing.T, endpoint, key string) {
	t.Helper()
	release := helmrelease.New(t, s.c, restoredRelease, etcdNamespace)
	version := e2eutil.GetCluster(t, s.c, etcdNamespace, etcdRelease).Spec.Version
	values := map[string]any{"replicas": 1, "version": version, "bootstrap": map[string]any{"restore": map[string]any{"source": "s3",
		"s3": map[string]any{"endpoint": endpoint, "bucket": bucket, "key": key, "credentialsSecretName": s3CredsSecret, "forcePathStyle": true}}}}
	took := release.Install(t, helmrelease.RepoPath(t, "charts/etcd"), values)
	t.Logf("helm install %s (restore from s3 %s): %s", restoredRelease, key, took.Round(time.Millisecond))
	took = e2eutil.WaitSeen(t, 3*time.Minute, "EtcdCluster "+restoredRelease+" Available with 1 member", func() (bool, string) {
		return e2eutil.ClusterAvailable(s.c, etcdNamespace, restoredRelease, 1)
	})
	t.Logf("restored cluster Available: %s", took.Round(time.Millisecond))
	seed := e2eutil.Members(t, s.c, etcdNamespace, restoredRelease)[0]
	pod := e2eutil.Pod(t, s.c, etcdNamespace, seed.Name)
	s.checkRanBuiltOperator(t, pod, v1alpha2.ToolsContainer)
	checkRanBuiltEtcd(t, pod, v1alpha2.RestoreContainer, seed.Spec.Version)
	cfg := e2eutil.TLSConfig(t, s.c, etcdNamespace, restoredRelease+"-server-tls", restoredRelease+"-client-tls")
	cli := e2eutil.TLSEtcdClient(t, s.c, etcdNamespace, restoredRelease, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, "/e2e/real/snapshot")
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "in the snapshot" {
		t.Fatalf("the restored cluster's /e2e/real/snapshot: %v %v", err, resp)
	}
	// The restored release has done its part; its Pods would only take CPU from the next steps.
	release.Uninstall(t)
}

// agentPods are the snapshot agent Pods' states once their agent container ended, by Pod name.
type agentPods struct {
	mu   sync.Mutex
	seen map[string]*corev1.Pod
}

// recordAgentPods watches the tenant namespace for snapshot agent Pods (they may be deleted as
// soon as the snapshot completes) and keeps each one's state once its agent container ended.
func (s *suite) recordAgentPods(t *testing.T) *agentPods {
	a := &agentPods{seen: map[string]*corev1.Pod{}}
	sel := v1alpha2.LabelAppComponent + "=" + v1alpha2.ComponentSnapshotAgent
	e2eutil.WatchPods(t, s.c, etcdNamespace, metav1.ListOptions{LabelSelector: sel}, func(p *corev1.Pod) bool {
		for _, st := range p.Status.ContainerStatuses {
			if st.Name == v1alpha2.AgentContainer && st.State.Terminated != nil {
				a.mu.Lock()
				a.seen[p.Name] = p.DeepCopy()
				a.mu.Unlock()
			}
		}
		return false
	})
	return a
}

// check: an agent Pod ran the built operator image on a real node and succeeded.
func (a *agentPods) check(t *testing.T, s *suite) {
	t.Helper()
	var pods []*corev1.Pod
	e2eutil.WaitFor(t, 30*time.Second, "the snapshot agent Pod's final state", func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		pods = pods[:0]
		for _, p := range a.seen {
			pods = append(pods, p)
		}
		return len(pods) > 0
	})
	for _, p := range pods {
		s.checkRanBuiltOperator(t, p, v1alpha2.AgentContainer)
		if term := containerStatus(p, v1alpha2.AgentContainer).State.Terminated; term.ExitCode != 0 {
			t.Errorf("agent Pod %s: %s exit %d: %s", p.Name, term.Reason, term.ExitCode, term.Message)
		}
	}
}
