package maintenance

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/defrag"
	"github.com/cozystack/etcd-operator/operator/internal/etcd"
	"github.com/cozystack/etcd-operator/operator/internal/kubectletcd"
)

func l(name string, id, leader, applied uint64, learner bool) live {
	return live{member: v1alpha2.EtcdMember{ObjectMeta: metav1.ObjectMeta{Name: name}},
		status: etcd.EndpointStatus{MemberID: id, Leader: leader, RaftAppliedIndex: applied, IsLearner: learner}}
}

func TestTransferee(t *testing.T) {
	ls := []live{l("a", 1, 1, 100, false), l("b", 2, 1, 90, false), l("c", 3, 1, 99, false), l("d", 4, 1, 100, true)}
	leader := ls[0]
	for _, tc := range []struct {
		to, want string
		code     int
	}{
		{"", "c", kubectletcd.ExitOK}, // the most caught-up voter; the learner d never
		{"b", "b", kubectletcd.ExitOK},
		{"a", "", kubectletcd.ExitUsage},
		{"d", "", kubectletcd.ExitUsage},
		{"zz", "", kubectletcd.ExitNotFound},
	} {
		got, err := transferee(ls, leader, tc.to)
		if kubectletcd.CodeOf(err) != tc.code || (err == nil && got.member.Name != tc.want) {
			t.Errorf("to %q: %s %v, want %q exit %d", tc.to, got.member.Name, err, tc.want, tc.code)
		}
	}
	if _, err := transferee([]live{leader}, leader, ""); kubectletcd.CodeOf(err) != kubectletcd.ExitUnhealthy {
		t.Errorf("alone: %v", err)
	}
}

func TestSeriousIgnoresNoSpace(t *testing.T) {
	got := serious([]string{"memberID:1 alarm:NOSPACE", "raft: stopped"})
	if len(got) != 1 || got[0] != "raft: stopped" {
		t.Fatalf("%v", got)
	}
}

// The live order follows the plan (leader last) with leadership as it is now: once the
// planned leader's leadership moved, Next defragments it without moving it again.
func TestLiveOrderFollowsLeadership(t *testing.T) {
	plan := defrag.Plan([]defrag.Member{{Name: "a", Leader: true}, {Name: "b"}, {Name: "c"}}, defrag.Rule{All: true})
	pending := map[string]bool{"a": true, "b": false, "c": false}
	before := liveOrder(plan, []live{l("a", 1, 1, 0, false), l("b", 2, 1, 0, false), l("c", 3, 1, 0, false)}, pending)
	if a := defrag.Next(before); a.Kind != defrag.MoveLeader || a.Member != "a" {
		t.Fatalf("leader pending: %+v", a)
	}
	after := liveOrder(plan, []live{l("a", 1, 2, 0, false), l("b", 2, 2, 0, false), l("c", 3, 2, 0, false)}, pending)
	if a := defrag.Next(after); a.Kind != defrag.Defragment || a.Member != "a" {
		t.Fatalf("leadership moved: %+v", a)
	}
}
