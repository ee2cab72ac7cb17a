//go:build e2e

package e2eutil

// The legacy operator's part in etcd-migrate's e2e: its CRD, and clusters built exactly as it
// builds them (operator/internal/migrate/legacy renders the objects), with no legacy operator
// running. The test plays its webhook and controller.

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/internal/testenv"
	"github.com/cozystack/etcd-operator/operator/internal/migrate/legacy"
)

// LegacyReadyTimeout bounds the wait for a new legacy cluster's StatefulSet to become ready.
const LegacyReadyTimeout = 3 * time.Minute

// LegacyStorageSize is the claim size of CreateLegacyCluster's clusters: small, the local
// cluster's volumes are host folders.
const LegacyStorageSize = "1Gi"

// LegacyEtcdVersion is the 3.5 release among EtcdVersions: legacy clusters run 3.5 (the legacy
// operator's default image is v3.5.12, which the tools cache does not hold).
func LegacyEtcdVersion() string {
	for _, v := range EtcdVersions {
		if strings.HasPrefix(v, "3.5.") {
			return v
		}
	}
	panic("no etcd 3.5 in EtcdVersions")
}

// InstallLegacyCRD installs the legacy EtcdCluster CRD (the fixture generated from
// operator/internal/migrate/legacy). Installing it again updates it.
func InstallLegacyCRD(t testing.TB, c *framework.Cluster) {
	t.Helper()
	_, err := envtest.InstallCRDs(c.Config, envtest.CRDInstallOptions{
		Paths: []string{testenv.FixtureCRDDir("legacy")}, ErrorIfPathMissing: true,
	})
	if err != nil {
		t.Fatal(err)
	}
}

// CreateLegacyCluster creates a legacy EtcdCluster and what the legacy operator would create for
// it, waits until its StatefulSet is ready, then finishes the bootstrap as the operator does
// (cluster state "existing", Initialized and Ready conditions). The default is 3 replicas of
// etcd LegacyEtcdVersion on LegacyStorageSize claims of the default StorageClass; mutate
// changes the spec before the legacy webhook's defaults apply. Secrets the spec names must
// exist already. It returns the cluster as stored.
func CreateLegacyCluster(t testing.TB, c *framework.Cluster, ns, name string, mutate ...func(*legacy.EtcdCluster)) *legacy.EtcdCluster {
	t.Helper()
	InstallLegacyCRD(t, c)
	ec := &legacy.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: legacy.EtcdClusterSpec{
			Replicas: ptr.To[int32](3),
			PodTemplate: legacy.PodTemplate{Spec: corev1.PodSpec{Containers: []corev1.Container{
				{Name: legacy.EtcdContainerName, Image: "quay.io/coreos/etcd:v" + LegacyEtcdVersion()},
			}}},
		},
	}
	ec.Spec.Storage.VolumeClaimTemplate.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(LegacyStorageSize)}
	for _, m := range mutate {
		m(ec)
	}
	legacy.Default(ec) // the legacy mutating webhook, at admission
	createLegacyCR(t, c, ec)
	ec = GetLegacyCluster(t, c, ns, name) // with its UID, for the owner references
	createLegacyObjects(t, c, ec)
	setLegacyConditions(t, c, ec,
		metav1.Condition{Type: legacy.ConditionInitialized, Status: metav1.ConditionTrue,
			Reason: legacy.ReasonInitializationComplete, Message: legacy.MessageInitializationComplete},
		metav1.Condition{Type: legacy.ConditionReady, Status: metav1.ConditionFalse,
			Reason: legacy.ReasonWaitingForFirstQuorum, Message: legacy.MessageWaitingForFirstQuorum})
	WaitLegacyStatefulSetReady(t, c, ns, name, LegacyReadyTimeout)
	setLegacyConditions(t, c, GetLegacyCluster(t, c, ns, name),
		metav1.Condition{Type: legacy.ConditionReady, Status: metav1.ConditionTrue,
			Reason: legacy.ReasonStatefulSetReady, Message: legacy.MessageStatefulSetReady})
	// Once Ready has left WaitingForFirstQuorum the operator says "existing" for good, so a
	// restarted member never bootstraps a new cluster.
	setLegacyClusterState(t, c, ec, legacy.InitialClusterStateExisting)
	return GetLegacyCluster(t, c, ns, name)
}

func createLegacyCR(t testing.TB, c *framework.Cluster, ec *legacy.EtcdCluster) {
	t.Helper()
	u, err := legacy.ToUnstructured(ec)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Client.Create(context.Background(), u); err != nil {
		t.Fatalf("creating legacy EtcdCluster %s/%s: %v", ec.Namespace, ec.Name, err)
	}
}

// createLegacyObjects creates the Services, the ConfigMap in state "new", the PDB when
// templated and the StatefulSet, in the legacy operator's order.
func createLegacyObjects(t testing.TB, c *framework.Cluster, ec *legacy.EtcdCluster) {
	t.Helper()
	clientSvc, err := legacy.ClientService(ec)
	if err != nil {
		t.Fatal(err)
	}
	sts, err := legacy.StatefulSet(ec)
	if err != nil {
		t.Fatal(err)
	}
	objects := []client.Object{clientSvc, legacy.HeadlessService(ec)}
	if pdb := legacy.PodDisruptionBudget(ec); pdb != nil {
		objects = append(objects, pdb)
	}
	objects = append(objects, legacy.ClusterStateConfigMap(ec, legacy.InitialClusterStateNew), sts)
	for _, o := range objects {
		if err := c.Client.Create(context.Background(), o); err != nil {
			t.Fatalf("creating %T %s/%s: %v", o, o.GetNamespace(), o.GetName(), err)
		}
	}
}

// setLegacyConditions writes conditions into the cluster's status as the legacy operator does
// (observedGeneration is the cluster's generation).
func setLegacyConditions(t testing.TB, c *framework.Cluster, ec *legacy.EtcdCluster, conds ...metav1.Condition) {
	t.Helper()
	for _, cond := range conds {
		cond.ObservedGeneration = ec.Generation
		meta.SetStatusCondition(&ec.Status.Conditions, cond)
	}
	u, err := legacy.ToUnstructured(ec)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Client.Status().Update(context.Background(), u); err != nil {
		t.Fatalf("updating status of legacy EtcdCluster %s/%s: %v", ec.Namespace, ec.Name, err)
	}
}

func setLegacyClusterState(t testing.TB, c *framework.Cluster, ec *legacy.EtcdCluster, state string) {
	t.Helper()
	cm := &corev1.ConfigMap{}
	key := client.ObjectKey{Namespace: ec.Namespace, Name: legacy.ConfigMapName(ec)}
	if err := c.Client.Get(context.Background(), key, cm); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(cm.DeepCopy())
	cm.Data["ETCD_INITIAL_CLUSTER_STATE"] = state
	if err := c.Client.Patch(context.Background(), cm, patch); err != nil {
		t.Fatal(err)
	}
}

// GetLegacyCluster reads a legacy EtcdCluster.
func GetLegacyCluster(t testing.TB, c *framework.Cluster, ns, name string) *legacy.EtcdCluster {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(legacy.GroupVersionKind)
	if err := c.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
		t.Fatal(err)
	}
	ec, err := legacy.FromUnstructured(u)
	if err != nil {
		t.Fatal(err)
	}
	return ec
}

// WaitLegacyStatefulSetReady waits until the legacy StatefulSet has all its replicas ready,
// the legacy operator's whole notion of a ready cluster.
func WaitLegacyStatefulSetReady(t testing.TB, c *framework.Cluster, ns, name string, timeout time.Duration) time.Duration {
	t.Helper()
	key := client.ObjectKey{Namespace: ns, Name: name} // the StatefulSet is named after the cluster
	return WaitFor(t, timeout, "legacy StatefulSet "+ns+"/"+name+" ready", func() bool {
		sts := &appsv1.StatefulSet{}
		if err := c.Client.Get(context.Background(), key, sts); err != nil {
			return false
		}
		return sts.Status.ObservedGeneration >= sts.Generation &&
			sts.Status.ReadyReplicas == ptr.Deref(sts.Spec.Replicas, 1)
	})
}

// LegacyPods are the pods of the legacy StatefulSet in ordinal order. They are found by owner,
// not by labels: the legacy backup Jobs' pods carry the same labels.
func LegacyPods(t testing.TB, c *framework.Cluster, ns, name string) []corev1.Pod {
	t.Helper()
	ctx := context.Background()
	sts := &appsv1.StatefulSet{}
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, sts); err != nil {
		t.Fatal(err)
	}
	var list corev1.PodList
	if err := c.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var pods []corev1.Pod
	for _, p := range list.Items {
		if owner := metav1.GetControllerOf(&p); owner != nil && owner.UID == sts.UID {
			pods = append(pods, p)
		}
	}
	slices.SortFunc(pods, func(a, b corev1.Pod) int { return ordinal(a.Name) - ordinal(b.Name) })
	return pods
}

// ordinal is the StatefulSet ordinal at the end of a pod name.
func ordinal(pod string) int {
	n, _ := strconv.Atoi(pod[strings.LastIndex(pod, "-")+1:])
	return n
}
