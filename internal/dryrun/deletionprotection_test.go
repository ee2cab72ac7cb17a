package dryrun

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/internal/testenv"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

// The defaults render installs release etcd-operator in etcd-operator-system.
const operatorUser = "system:serviceaccount:etcd-operator-system:etcd-operator"

// TestDeletionProtection installs the operator chart's admission policy and binding (as the
// defaults render has them) for real: a user's delete of an EtcdMember or of a member's PVC is
// refused with the policy's message; the operator, the garbage collector and the namespace
// controller are admitted, and so is a user once the object is annotated allow-deletion. The
// deletes are dry runs: admission judges them, nothing is removed.
func TestDeletionProtection(t *testing.T) {
	ctx := context.Background()
	objs, err := readObjects(filepath.Join(testenv.RepoRoot(), "charts", "testdata", "etcd-operator", "defaults.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	installed := 0
	for _, o := range objs {
		if strings.HasPrefix(o.GetKind(), "ValidatingAdmissionPolicy") {
			if err := env.Client.Create(ctx, o); err != nil {
				t.Fatal(err)
			}
			installed++
			t.Cleanup(func() { _ = env.Client.Delete(ctx, o) })
		}
	}
	if installed != 2 {
		t.Fatalf("%d admission policy objects in the defaults render, want the policy and its binding", installed)
	}

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "deletion-protection"}}
	if err := env.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	member := &v1alpha2.EtcdMember{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "etcd-abcde"},
		Spec: v1alpha2.EtcdMemberSpec{ClusterName: "etcd", Version: "3.6.16", ClusterToken: "t",
			Storage: v1alpha2.StorageSpec{Size: resource.MustParse("1Gi")}}}
	memberPVC := pvc(ns.Name, "data-etcd-abcde", map[string]string{
		v1alpha2.LabelAppManagedBy: v1alpha2.ManagedBy, v1alpha2.LabelCluster: "etcd"})
	otherPVC := pvc(ns.Name, "snapshots", map[string]string{v1alpha2.LabelCluster: "etcd"}) // not the operator's
	for _, o := range []client.Object{member, memberPVC, otherPVC} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}

	alice := as(t, "alice")
	// The policy is compiled and bound asynchronously: wait until it judges.
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		return dryDelete(ctx, alice, member) != nil, nil
	})
	if err != nil {
		t.Fatal("the policy never refused a user's delete of an EtcdMember")
	}
	refused := func(c client.Client, o client.Object) {
		t.Helper()
		err := dryDelete(ctx, c, o)
		if err == nil || !strings.Contains(err.Error(), "quorum gate") || !strings.Contains(err.Error(), v1alpha2.AnnotationAllowDeletion) {
			t.Errorf("delete of %s: %v, want the policy's refusal naming the override", o.GetName(), err)
		}
	}
	admitted := func(c client.Client, o client.Object, who string) {
		t.Helper()
		if err := dryDelete(ctx, c, o); err != nil {
			t.Errorf("%s deleting %s: %v", who, o.GetName(), err)
		}
	}
	refused(alice, member)
	refused(alice, memberPVC)
	admitted(alice, otherPVC, "a user")
	for _, who := range []string{operatorUser, "system:serviceaccount:kube-system:generic-garbage-collector",
		"system:serviceaccount:kube-system:namespace-controller"} {
		admitted(as(t, who), member, who)
		admitted(as(t, who), memberPVC, who)
	}
	for _, o := range []client.Object{member, memberPVC} {
		patch := client.MergeFrom(o.DeepCopyObject().(client.Object))
		o.SetAnnotations(map[string]string{v1alpha2.AnnotationAllowDeletion: "true"})
		if err := env.Client.Patch(ctx, o, patch); err != nil {
			t.Fatal(err)
		}
		admitted(alice, o, "a user, once annotated")
	}
}

func pvc(ns, name string, labels map[string]string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
}

// as is a client acting as user (in system:masters, so RBAC lets it through to admission).
func as(t *testing.T, user string) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:masters", "system:authenticated"}}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func dryDelete(ctx context.Context, c client.Client, o client.Object) error {
	return c.Delete(ctx, o, client.DryRunAll)
}
