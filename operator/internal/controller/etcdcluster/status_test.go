package etcdcluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/etcd"
	"github.com/cozystack/etcd-operator/operator/internal/membership"
)

func TestConditions(t *testing.T) {
	voter := func(name string, ok bool) membership.Member {
		return membership.Member{Name: name, InEtcd: true, ID: uint64(len(name)), Ready: ok, Healthy: ok}
	}
	none := membership.Action{Kind: membership.None, Reason: "Reconciled"}
	formed := func(desired int32, ms ...membership.Member) membership.Observed {
		return membership.Observed{Desired: desired, Formed: true, Reachable: true, Members: ms}
	}
	cases := []struct {
		name                         string
		obs                          membership.Observed
		action                       membership.Action
		avail, progress, degraded    string // reasons
		availTrue, progTrue, degTrue bool
		auth                         string // reason of an auth problem, if any
	}{
		{"healthy", formed(3, voter("a", true), voter("b", true), voter("c", true)), none,
			v1alpha2.ReasonQuorumHealthy, v1alpha2.ReasonReconciled, v1alpha2.ReasonQuorumHealthy, true, false, false, ""},
		{"one down", formed(3, voter("a", true), voter("b", true), voter("c", false)), none,
			v1alpha2.ReasonQuorumAvailable, v1alpha2.ReasonReconciled, v1alpha2.ReasonMembersUnhealthy, true, false, true, ""},
		{"quorum lost", formed(3, voter("a", true), voter("b", false), voter("c", false)), membership.Action{Kind: membership.Wait, Reason: "QuorumGate"},
			v1alpha2.ReasonQuorumLost, "QuorumGate", v1alpha2.ReasonQuorumLost, false, true, true, ""},
		{"all lost", formed(3), membership.Action{Kind: membership.AllMembersLost, Reason: "AllMembersLost", Message: "gone"},
			v1alpha2.ReasonAllMembersLost, v1alpha2.ReasonAllMembersLost, v1alpha2.ReasonAllMembersLost, false, false, true, ""},
		{"never bootstrapped", membership.Observed{Desired: 0}, membership.Action{Kind: membership.None, Reason: "Paused"},
			v1alpha2.ReasonPaused, v1alpha2.ReasonPaused, v1alpha2.ReasonPaused, false, false, false, ""},
		{"scaling up", formed(3, voter("a", true)), membership.Action{Kind: membership.AddMember},
			v1alpha2.ReasonQuorumHealthy, v1alpha2.ReasonScalingUp, v1alpha2.ReasonQuorumHealthy, true, true, false, ""},
		{"unreachable", membership.Observed{Desired: 3, Formed: true, Members: []membership.Member{voter("a", false)}},
			membership.Action{Kind: membership.Wait, Reason: "ClusterUnreachable"},
			v1alpha2.ReasonClusterUnreachable, "ClusterUnreachable", v1alpha2.ReasonClusterUnreachable, false, true, true, ""},
		// Credentials etcd refuses: the operator cannot read the cluster; both conditions say why.
		{"auth rejected", membership.Observed{Desired: 3, Formed: true, Members: []membership.Member{voter("a", false)}},
			membership.Action{Kind: membership.Wait, Reason: "ClusterUnreachable"},
			v1alpha2.ReasonAuthCredentialsRejected, "ClusterUnreachable", v1alpha2.ReasonAuthCredentialsRejected, false, true, true,
			v1alpha2.ReasonAuthCredentialsRejected},
		// A missing Secret before auth is on: etcd is readable and healthy, only Degraded says it.
		{"auth Secret missing", formed(3, voter("a", true), voter("b", true), voter("c", true)), none,
			v1alpha2.ReasonQuorumHealthy, v1alpha2.ReasonReconciled, v1alpha2.ReasonAuthCredentialsMissing, true, false, true,
			v1alpha2.ReasonAuthCredentialsMissing},
	}
	for _, tc := range cases {
		st := &clusterState{
			cluster: &v1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Generation: 4},
				Spec: v1alpha2.EtcdClusterSpec{Replicas: ptr.To(tc.obs.Desired)}},
			status: &v1alpha2.EtcdClusterStatus{}, obs: tc.obs, action: tc.action, decided: true,
		}
		if tc.obs.Reachable {
			st.etcd.list = &etcd.MemberList{}
		}
		if tc.auth != "" {
			c := cond(v1alpha2.ConditionDegraded, true, tc.auth, "auth")
			st.auth.problem = &c
		}
		for _, m := range tc.obs.Members {
			st.members = append(st.members, v1alpha2.EtcdMember{ObjectMeta: metav1.ObjectMeta{Name: m.Name}})
		}
		computeStatus(st, time.Now())
		check := func(typ, reason string, want bool) {
			for _, c := range st.status.Conditions {
				if c.Type == typ {
					if c.Reason != reason || (c.Status == metav1.ConditionTrue) != want || c.ObservedGeneration != 4 {
						t.Errorf("%s: %s = %s/%s (gen %d), want %v/%s", tc.name, typ, c.Status, c.Reason, c.ObservedGeneration, want, reason)
					}
					return
				}
			}
			t.Errorf("%s: no %s condition", tc.name, typ)
		}
		check(v1alpha2.ConditionAvailable, tc.avail, tc.availTrue)
		check(v1alpha2.ConditionProgressing, tc.progress, tc.progTrue)
		check(v1alpha2.ConditionDegraded, tc.degraded, tc.degTrue)
	}
}

func TestComputeStatusIsStable(t *testing.T) {
	st := &clusterState{
		cluster: &v1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Generation: 1}},
		status:  &v1alpha2.EtcdClusterStatus{},
		obs: membership.Observed{Desired: 1, Formed: true, Reachable: true,
			Members: []membership.Member{{Name: "a", InEtcd: true, ID: 7, IsLeader: true, Ready: true, Healthy: true}}},
		action:  membership.Action{Kind: membership.None},
		etcd:    etcdView{list: &etcd.MemberList{}, leader: 7},
		decided: true,
	}
	st.members = []v1alpha2.EtcdMember{{ObjectMeta: metav1.ObjectMeta{Name: "a"}}}
	computeStatus(st, time.Now())
	first := st.status.DeepCopy()
	computeStatus(st, time.Now())
	if !equalStatus(first, st.status) {
		t.Errorf("a second pass over the same facts changed status:\n%+v\n%+v", first, st.status)
	}
	if first.Members[0].Role != v1alpha2.MemberRoleLeader || first.LeaderID != etcd.FormatID(7) || first.Selector == "" {
		t.Errorf("status %+v", first)
	}
}

func equalStatus(a, b *v1alpha2.EtcdClusterStatus) bool { return equality.Semantic.DeepEqual(a, b) }

func TestProgressDeadline(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	st := &clusterState{
		cluster: &v1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Generation: 1},
			Spec: v1alpha2.EtcdClusterSpec{Replicas: ptr.To[int32](3), ProgressDeadlineSeconds: ptr.To[int32](60)}},
		status:  &v1alpha2.EtcdClusterStatus{},
		obs:     membership.Observed{Desired: 3, Formed: true, Reachable: true},
		action:  membership.Action{Kind: membership.Wait, Reason: "LearnerCatchingUp", Message: "catching up"},
		decided: true,
	}
	computeStatus(st, now)
	if st.status.ProgressDeadline == nil || !st.status.ProgressDeadline.Time.Equal(now.Add(time.Minute)) {
		t.Fatalf("deadline %v", st.status.ProgressDeadline)
	}
	computeStatus(st, now.Add(2*time.Minute))
	c := meta.FindStatusCondition(st.status.Conditions, v1alpha2.ConditionProgressing)
	if c.Status != metav1.ConditionFalse || c.Reason != v1alpha2.ReasonDeadlineExceeded {
		t.Errorf("past the deadline: %+v", c)
	}
	st.action = membership.Action{Kind: membership.None}
	computeStatus(st, now.Add(3*time.Minute))
	if st.status.ProgressDeadline != nil {
		t.Error("a settled cluster has no deadline")
	}
}

// A pass that stopped before decide (an API error while syncing trust, say) observed nothing:
// the stored members, counts and health stand, restamped for the generation; only its own
// failure is reported. It used to write "paused, never bootstrapped" and an empty
// status.members, which let the CRD's version rule admit a minor-skipping edit.
func TestPassStoppedBeforeDecideKeepsWhatItDidNotSee(t *testing.T) {
	stored := v1alpha2.EtcdClusterStatus{
		ObservedGeneration: 3, ReadyMembers: 3, LeaderID: "7",
		Members: []v1alpha2.ClusterMemberStatus{{Name: "a", Version: "3.6.16", Ready: true, Role: v1alpha2.MemberRoleLeader}},
		Conditions: []metav1.Condition{
			{Type: v1alpha2.ConditionAvailable, Status: metav1.ConditionTrue, Reason: v1alpha2.ReasonQuorumHealthy},
			{Type: v1alpha2.ConditionDegraded, Status: metav1.ConditionFalse, Reason: v1alpha2.ReasonQuorumHealthy},
			{Type: v1alpha2.ConditionProgressing, Status: metav1.ConditionFalse, Reason: v1alpha2.ReasonReconciled},
		},
	}
	for _, tc := range []struct {
		name         string
		err          error
		wantProgress string
	}{
		{"API error", errors.New("configmaps is forbidden"), v1alpha2.ReasonActionFailed},
		{"etcd's retry later", fmt.Errorf("dial: %w", rpctypes.ErrGRPCLearnerNotReady), v1alpha2.ReasonReconciled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &clusterState{
				cluster: &v1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Generation: 4},
					Spec: v1alpha2.EtcdClusterSpec{Replicas: ptr.To[int32](3)}},
				status: stored.DeepCopy(), err: tc.err,
			}
			computeStatus(st, time.Now())
			s := st.status
			if s.ObservedGeneration != 4 || s.ProgressDeadline == nil || s.ReadyMembers != 3 || s.LeaderID != "7" || len(s.Members) != 1 || s.Members[0].Version != "3.6.16" {
				t.Errorf("what the pass did not observe changed: %+v", s)
			}
			for typ, want := range map[string]string{v1alpha2.ConditionAvailable: v1alpha2.ReasonQuorumHealthy,
				v1alpha2.ConditionDegraded: v1alpha2.ReasonQuorumHealthy, v1alpha2.ConditionProgressing: tc.wantProgress} {
				if c := meta.FindStatusCondition(s.Conditions, typ); c == nil || c.Reason != want || c.ObservedGeneration != 4 {
					t.Errorf("%s = %+v, want reason %s", typ, c, want)
				}
			}
		})
	}
}

// An error outside a membership action (auth, TLS) is named as the pass's: the Event's action
// must not be empty, or the API server rejects the Event.
func TestFailedStepNamed(t *testing.T) {
	st := &clusterState{err: errors.New("AuthStatus: etcdserver: user name not found")}
	c := progressing(st)
	if c.Reason != v1alpha2.ReasonActionFailed || c.Message != "Reconcile failed: AuthStatus: etcdserver: user name not found" {
		t.Fatalf("%+v", c)
	}
	st.action = membership.Action{Kind: membership.AddMember}
	if got := failedStep(st); got != string(membership.AddMember) {
		t.Fatalf("failedStep = %q", got)
	}
}

// etcd's by-design refusals are the plan of a learner's join (an ordinary one met eight), not
// news: the pass retries within a second and says nothing at info, only at debug.
func TestRetryableRefusalIsDebugOnly(t *testing.T) {
	c := &v1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", UID: "u"}}
	cl := fake.NewClientBuilder().WithScheme(certScheme(t)).WithObjects(c).WithStatusSubresource(c).Build()
	r := &Reconciler{Client: cl}
	for _, verbosity := range []int{0, 1} {
		var lines []string
		logger := funcr.New(func(_, args string) { lines = append(lines, args) }, funcr.Options{Verbosity: verbosity})
		ctx := log.IntoContext(context.Background(), logger)
		got := &v1alpha2.EtcdCluster{}
		if err := cl.Get(ctx, client.ObjectKeyFromObject(c), got); err != nil {
			t.Fatal(err)
		}
		st := &clusterState{cluster: got, status: got.Status.DeepCopy(), memo: r.memo(got),
			err: fmt.Errorf("promoting: %w", rpctypes.ErrGRPCLearnerNotReady)}
		res, err := r.finish(ctx, st)
		if err != nil || res.RequeueAfter <= 0 || res.RequeueAfter > maxEtcdRetry {
			t.Fatalf("verbosity %d: result %+v, err %v; want a retry within %v", verbosity, res, err, maxEtcdRetry)
		}
		retryLogged := slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, "etcd asked to retry later") })
		if retryLogged != (verbosity >= 1) {
			t.Errorf("verbosity %d: retry logged %v, want it at debug (V(1)) only; lines %q", verbosity, retryLogged, lines)
		}
	}
}
