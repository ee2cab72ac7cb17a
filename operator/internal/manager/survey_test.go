package manager

import (
	"context"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

// The survey counts, per cluster, the members whose Pod is outdated under this build, says so
// with one Event per cluster that will roll, and only then lifts the hold on rollouts.
func TestUpgradeSurveyCountsWhatThisBuildRestarts(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha2.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	cluster := func(ns, name string) *v1alpha2.EtcdCluster {
		return &v1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	member := func(ns, cluster, name string) *v1alpha2.EtcdMember {
		return &v1alpha2.EtcdMember{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1alpha2.EtcdMemberSpec{ClusterName: cluster}}
	}
	pod := func(ns, cluster, name, revision string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			Labels:      map[string]string{v1alpha2.LabelCluster: cluster},
			Annotations: map[string]string{v1alpha2.AnnotationPodRevision: revision}}}
	}
	objs := []client.Object{
		cluster("a", "rolls"), member("a", "rolls", "rolls-1"), pod("a", "rolls", "rolls-1", "old"),
		member("a", "rolls", "rolls-2"), pod("a", "rolls", "rolls-2", "old"),
		member("a", "rolls", "rolls-3"), pod("a", "rolls", "rolls-3", "current"),
		cluster("b", "steady"), member("b", "steady", "steady-1"), pod("b", "steady", "steady-1", "current"),
		member("b", "steady", "steady-2"),                                        // no Pod yet: nothing to restart
		member("b", "orphan", "orphan-1"), pod("b", "orphan", "orphan-1", "old"), // no cluster
	}
	cl := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	rec := events.NewFakeRecorder(10)
	s := &upgradeSurvey{client: cl, recorder: rec, outdated: func(_ *v1alpha2.EtcdMember, _ *v1alpha2.EtcdCluster, p *corev1.Pod) bool {
		return p.Annotations[v1alpha2.AnnotationPodRevision] != "current"
	}}
	if s.hold() == "" {
		t.Fatal("rollouts are not held before the survey")
	}
	if err := s.Start(logr.NewContext(context.Background(), logr.Discard())); err != nil {
		t.Fatal(err)
	}
	if h := s.hold(); h != "" {
		t.Errorf("rollouts still held after the survey: %s", h)
	}
	close(rec.Events)
	var got []string
	for e := range rec.Events {
		got = append(got, e)
	}
	if len(got) != 1 || !strings.Contains(got[0], "2 member(s)") {
		t.Errorf("events %q, want one for cluster a/rolls naming 2 members", got)
	}
	var clusters v1alpha2.EtcdClusterList
	var members v1alpha2.EtcdMemberList
	var pods corev1.PodList
	_ = cl.List(context.Background(), &clusters)
	_ = cl.List(context.Background(), &members)
	_ = cl.List(context.Background(), &pods)
	rolls := toRoll(clusters.Items, members.Items, pods.Items, s.outdated)
	if len(rolls) != 1 || rolls[types.NamespacedName{Namespace: "a", Name: "rolls"}] != 2 {
		t.Errorf("toRoll = %v", rolls)
	}
}
