package etcdcluster

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/etcd/etcdtest"
	"github.com/cozystack/etcd-operator/operator/internal/etcdaccess"
)

func TestCacheBehind(t *testing.T) {
	now := time.Now()
	cases := []struct {
		name    string
		cached  string
		wrote   uint64
		wroteAt time.Time
		want    bool
	}{
		{"nothing written yet", "5", 0, time.Time{}, false},
		{"cache has our write", "7", 7, now, false},
		{"cache past our write", "9", 7, now, false},
		{"cache before our write", "6", 7, now, true},
		{"cache before our write for too long", "6", 7, now.Add(-staleLimit), false},
		{"opaque resourceVersion", "x6", 7, now, false},
	}
	for _, tc := range cases {
		if got := cacheBehind(tc.cached, tc.wrote, tc.wroteAt, now); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A pass that built on an old copy of the cluster writes nothing (not a mix of its status and
// the newer one); a pass on the current copy writes, and then the old copy counts as behind.
func TestWriteStatusIsOptimistic(t *testing.T) {
	c := &v1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", UID: "u"},
		Status: v1alpha2.EtcdClusterStatus{ReadyMembers: 2}}
	cl := fake.NewClientBuilder().WithScheme(certScheme(t)).WithObjects(c).WithStatusSubresource(c).Build()
	ctx := context.Background()
	stale := &v1alpha2.EtcdCluster{}
	if err := cl.Get(ctx, client.ObjectKeyFromObject(c), stale); err != nil {
		t.Fatal(err)
	}
	// Another pass writes readyMembers 3 and a condition.
	newer := stale.DeepCopy()
	newer.Status.ReadyMembers = 3
	meta.SetStatusCondition(&newer.Status.Conditions, metav1.Condition{Type: v1alpha2.ConditionAvailable, Status: metav1.ConditionTrue, Reason: "R"})
	if err := cl.Status().Update(ctx, newer); err != nil {
		t.Fatal(err)
	}
	r := &Reconciler{Client: cl}
	// This pass saw readyMembers 2 and computed 2 with a False condition: from the old base,
	// a plain merge patch would send only the condition and keep readyMembers 3.
	want := stale.Status.DeepCopy()
	meta.SetStatusCondition(&want.Conditions, metav1.Condition{Type: v1alpha2.ConditionAvailable, Status: metav1.ConditionFalse, Reason: "R"})
	memo := r.memo(stale)
	conflict, err := r.writeStatus(ctx, &clusterState{cluster: stale.DeepCopy(), status: want, memo: memo})
	if err != nil || !conflict {
		t.Fatalf("write over a newer object: conflict %v, err %v", conflict, err)
	}
	got := &v1alpha2.EtcdCluster{}
	if err := cl.Get(ctx, client.ObjectKeyFromObject(c), got); err != nil {
		t.Fatal(err)
	}
	if got.Status.ReadyMembers != 3 || !meta.IsStatusConditionTrue(got.Status.Conditions, v1alpha2.ConditionAvailable) {
		t.Errorf("the newer status was changed: %+v", got.Status)
	}
	if memo.wrote != 0 {
		t.Errorf("a refused write was recorded: %d", memo.wrote)
	}
	st := &clusterState{cluster: got, status: want, memo: memo}
	if conflict, err := r.writeStatus(ctx, st); err != nil || conflict {
		t.Fatalf("write on the current object: conflict %v, err %v", conflict, err)
	}
	if !cacheBehind(newer.ResourceVersion, memo.wrote, memo.wroteAt, time.Now()) {
		t.Errorf("a copy at %s is not behind our write at %d", newer.ResourceVersion, memo.wrote)
	}
	if cacheBehind(got.ResourceVersion, memo.wrote, memo.wroteAt, time.Now()) {
		t.Errorf("the copy our write returned (%s) counts as behind it (%d)", got.ResourceVersion, memo.wrote)
	}
}

// A problem is reported once per occurrence, whether or not its condition was stored.
func TestDueOncePerOccurrence(t *testing.T) {
	c := &v1alpha2.EtcdCluster{}
	m := newMemo("")
	steps := []struct {
		resolve bool
		reason  string
		want    bool
	}{
		{false, v1alpha2.ReasonAuthCredentialsMissing, true},
		{false, v1alpha2.ReasonAuthCredentialsMissing, false}, // the status write was lost: still once
		{false, v1alpha2.ReasonAuthCredentialsRejected, true}, // another problem
		{true, "", false},
		{false, v1alpha2.ReasonAuthCredentialsRejected, true}, // it came back
	}
	for i, s := range steps {
		if s.resolve {
			m.resolved(topicAuth)
			continue
		}
		if got := m.due(c, topicAuth, s.reason); got != s.want {
			t.Errorf("step %d (%s): due %v, want %v", i, s.reason, got, s.want)
		}
	}
	// After a restart (an empty memo) the stored condition says it was reported.
	meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: v1alpha2.ConditionDegraded, Status: metav1.ConditionTrue,
		Reason: v1alpha2.ReasonAuthCredentialsRejected})
	if newMemo("").due(c, topicAuth, v1alpha2.ReasonAuthCredentialsRejected) {
		t.Error("reported again after a restart")
	}
}

// A new cluster of the same name starts with a fresh memo.
func TestMemoPerIncarnation(t *testing.T) {
	r := &Reconciler{}
	c := &v1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", UID: "one"}}
	r.memo(c).wrote = 9
	if r.memo(c).wrote != 9 {
		t.Fatal("memo not kept")
	}
	c.UID = "two"
	if r.memo(c).wrote != 0 {
		t.Error("a recreated cluster inherited the memo of the old one")
	}
	r.forget(types.NamespacedName{Namespace: "ns", Name: "c"})
	if _, ok := r.memos.Load(types.NamespacedName{Namespace: "ns", Name: "c"}); ok {
		t.Error("memo not forgotten")
	}
}

// laggingCache is a cache that has not seen the members written through it yet: member
// writes go to the apiserver (live) only; everything else reads and writes the cache.
type laggingCache struct {
	client.Client
	live client.Client
}

func (l laggingCache) route(obj client.Object) client.Client {
	if _, ok := obj.(*v1alpha2.EtcdMember); ok {
		return l.live
	}
	return l.Client
}

func (l laggingCache) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	return l.route(obj).Create(ctx, obj, opts...)
}

func (l laggingCache) Patch(ctx context.Context, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
	return l.route(obj).Patch(ctx, obj, p, opts...)
}

func (l laggingCache) Status() client.SubResourceWriter { return laggingStatus{l} }

type laggingStatus struct{ l laggingCache }

func (s laggingStatus) Create(ctx context.Context, obj, sub client.Object, opts ...client.SubResourceCreateOption) error {
	return s.l.route(obj).Status().Create(ctx, obj, sub, opts...)
}

func (s laggingStatus) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	return s.l.route(obj).Status().Update(ctx, obj, opts...)
}

func (s laggingStatus) Patch(ctx context.Context, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
	return s.l.route(obj).Status().Patch(ctx, obj, p, opts...)
}

func (s laggingStatus) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
	return s.l.Client.Status().Apply(ctx, obj, opts...)
}

// A pass on a member cache that lacks the seed the last pass created waits for the cache
// instead of creating a second seed (two seeds are two etcd clusters under one name).
func TestNoSecondSeedOnALaggingCache(t *testing.T) {
	c := &v1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", UID: "u"},
		Spec: v1alpha2.EtcdClusterSpec{Replicas: ptr.To[int32](3), Version: "3.6.16"}}
	s := certScheme(t)
	cache := fake.NewClientBuilder().WithScheme(s).WithObjects(c).WithStatusSubresource(c, &v1alpha2.EtcdMember{}).Build()
	live := fake.NewClientBuilder().WithScheme(s).WithStatusSubresource(&v1alpha2.EtcdMember{}).Build()
	r := &Reconciler{Client: laggingCache{Client: cache, live: live}, apiReader: live,
		Recorder: events.NewFakeRecorder(100), Etcd: etcdaccess.New(etcdtest.NewFakeFactory(), nil, cache)}
	ctx := context.Background()
	req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(c)}
	seeds := func() int {
		var list v1alpha2.EtcdMemberList
		if err := live.List(ctx, &list); err != nil {
			t.Fatal(err)
		}
		return len(list.Items)
	}
	for pass := range 3 {
		if _, err := r.Reconcile(ctx, req); err != nil {
			t.Fatalf("pass %d: %v", pass, err)
		}
		if n := seeds(); n != 1 {
			t.Fatalf("pass %d: %d members created, want the one seed", pass, n)
		}
	}
	// The cache catches up: the memo lets go, and passes go on.
	var list v1alpha2.EtcdMemberList
	if err := live.List(ctx, &list); err != nil {
		t.Fatal(err)
	}
	seed := list.Items[0].DeepCopy()
	seed.ResourceVersion = ""
	if err := cache.Create(ctx, seed); err != nil {
		t.Fatal(err)
	}
	if behind, err := r.membersBehind(ctx, c, r.memo(c)); err != nil || behind {
		t.Fatalf("cache with the seed: behind %v, err %v", behind, err)
	}
	if r.memo(c).created != "" {
		t.Errorf("memo still expects %q", r.memo(c).created)
	}
}
