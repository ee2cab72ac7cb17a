package membership

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

// voter is a healthy, ready voting member created n minutes after t0.
func voter(name string, n int) Member {
	return Member{Name: name, Created: t0.Add(time.Duration(n) * time.Minute), InEtcd: true, ID: uint64(100 + n),
		Ready: true, Healthy: true}
}

func leader(m Member) Member      { m.IsLeader = true; return m }
func seed(m Member) Member        { m.Seed = true; return m }
func learner(m Member) Member     { m.IsLearner = true; return m }
func notReady(m Member) Member    { m.Ready = false; return m }
func down(m Member) Member        { m.Healthy, m.Ready = false, false; return m }
func unreachable(m Member) Member { m.Healthy = false; return m }
func dormant(m Member) Member     { m.Dormant = true; m.Healthy, m.Ready = false, false; return m }
func deletingM(m Member) Member {
	m.Deleting = true
	return m
}
func pending(m Member) Member {
	m.Pending, m.InEtcd, m.ID, m.Ready, m.Healthy = true, false, 0, false, false
	return m
}
func broken(m Member, why string) Member { m.Broken = why; return m }
func dropped(m Member) Member            { m.InEtcd = false; return m }

func formed(desired int32, ms ...Member) Observed {
	return Observed{Desired: desired, Formed: true, Reachable: true, Members: ms}
}

func TestDecide(t *testing.T) {
	a := leader(seed(voter("a", 0)))
	b, c, d, e := voter("b", 1), voter("c", 2), voter("d", 3), voter("e", 4)
	lost := DataLostPrefix + "tmpfs Pod gone"
	cases := []struct {
		name string
		obs  Observed
		want Kind
		who  string
	}{
		// Bootstrap and discovery.
		{"new cluster creates the seed", Observed{Desired: 3}, Bootstrap, ""},
		{"replicas 0 at creation writes nothing", Observed{Desired: 0}, None, ""},
		{"seed not formed yet: wait", Observed{Desired: 3, Members: []Member{seed(voter("a", 0))}}, Wait, ""},
		{"seed created but not recorded: finish bootstrap", Observed{Desired: 3, Members: []Member{pending(seed(voter("a", 0)))}}, Bootstrap, "a"},
		// Scale up, one step at a time.
		{"1 -> 3 adds a member", formed(3, a), AddMember, ""},
		{"pending member is registered as learner", formed(3, a, pending(b)), CompletePending, "b"},
		{"learner whose etcd does not answer yet: wait", formed(3, a, down(learner(b))), Wait, ""},
		{"answering learner is promoted before its Pod is Ready (etcd checks it is in sync)", formed(3, a, notReady(learner(b))), Promote, "b"},
		{"caught-up learner is promoted", formed(3, a, learner(b)), Promote, "b"},
		{"ready learner the operator cannot reach yet is promoted (DNS may lag)", formed(3, a, unreachable(learner(b))), Promote, "b"},
		{"learner blocks a new pending member", formed(3, a, down(learner(b)), pending(c)), Wait, ""},
		{"pending member that is already the learner gets completed", formed(3, a, learner(pending(b))), CompletePending, "b"},
		{"no add while a member is not ready", formed(3, a, notReady(b)), Wait, ""},
		{"target reached", formed(3, a, b, c), None, ""},
		// Scale down.
		{"3 -> 1 removes the newest follower", formed(1, a, b, c), RemoveMember, "c"},
		{"learner goes first", formed(2, a, learner(b), c), RemoveMember, "b"},
		{"pending member goes first", formed(2, a, b, pending(c)), RemoveMember, "c"},
		{"unhealthy member goes before healthy newer ones", formed(3, a, down(b), c, d), RemoveMember, "b"},
		{"the leader is never chosen while a follower exists", formed(2, voter("a", 0), b, leader(c)), RemoveMember, "b"},
		{"one change at a time", formed(1, a, deletingM(b), c), Wait, ""},
		{"scale down waits when it would lose quorum", formed(2, a, down(b), down(c)), Wait, ""},
		// Pause and resume.
		{"1 -> 0 parks the last member", formed(0, a), Park, "a"},
		{"3 -> 0 goes through 1 first", formed(0, a, b, c), RemoveMember, "c"},
		{"paused cluster stays paused", formed(0, dormant(a)), None, ""},
		{"resume wakes the dormant member", Observed{Desired: 3, Formed: true, Members: []Member{dormant(a)}}, Wake, "a"},
		// Self-heal.
		{"tmpfs member with lost Pod is replaced", formed(3, a, b, broken(down(c), lost)), ReplaceMember, "c"},
		{"crash-looping member replaced when quorum allows", formed(3, a, b, broken(down(c), "crash-looping")), ReplaceMember, "c"},
		{"broken member kept when quorum would be lost", formed(3, a, down(b), broken(down(c), "crash-looping")), Wait, ""},
		{"single broken member is never removed", formed(1, broken(down(a), "crash-looping")), Wait, ""},
		{"broken leader hands leadership over first", formed(3, broken(a, "node NotReady"), b, c), MoveLeader, "a"},
		{"broken learner replaced", formed(3, a, b, broken(down(learner(c)), lost)), ReplaceMember, "c"},
		{"member dropped from etcd is replaced", formed(3, a, b, dropped(c)), ReplaceMember, "c"},
		{"every tmpfs member lost is terminal", formed(3, broken(down(a), lost), broken(down(b), lost)), AllMembersLost, ""},
		{"no member left is terminal", formed(3), AllMembersLost, ""},
		{"unreachable etcd blocks membership changes", Observed{Desired: 3, Formed: true, Members: []Member{a}}, Wait, ""},
		// Strays.
		{"stray learner removed", Observed{Desired: 3, Formed: true, Reachable: true, Members: []Member{a, b, c},
			Strays: []Stray{{ID: 999, IsLearner: true}}}, RemoveStray, ""},
		{"stray dead voter removed when quorum allows", Observed{Desired: 3, Formed: true, Reachable: true, Members: []Member{a, b, c},
			Strays: []Stray{{ID: 999}}}, RemoveStray, ""},
		{"stray voter kept when quorum would be lost", Observed{Desired: 1, Formed: true, Reachable: true, Members: []Member{down(a)},
			Strays: []Stray{{ID: 999}}}, Wait, ""},
		// Large clusters.
		{"5 -> 3 removes the newest", formed(3, a, b, c, d, e), RemoveMember, "e"},
		{"3 -> 5 adds", formed(5, a, b, c), AddMember, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Decide(tc.obs)
			if got.Kind != tc.want || (tc.who != "" && got.Member != tc.who) {
				t.Errorf("Decide = %+v, want %s %s", got, tc.want, tc.who)
			}
			if got.Reason == "" {
				t.Errorf("every action carries a reason: %+v", got)
			}
		})
	}
}

func TestMoveLeaderTargetsHealthyVoter(t *testing.T) {
	a := broken(leader(voter("a", 0)), "node NotReady")
	got := Decide(formed(5, a, down(voter("b", 1)), down(learner(voter("c", 2))), voter("d", 3), voter("e", 4)))
	if got.Kind != Wait { // the learner is not caught up: it is awaited before any other change
		t.Fatalf("got %+v", got)
	}
	got = Decide(formed(4, a, down(voter("b", 1)), voter("c", 2), voter("d", 3)))
	if got.Kind != MoveLeader || got.Target != voter("c", 2).ID {
		t.Fatalf("leadership must go to a healthy voter (c), got %+v", got)
	}
	if got = Decide(formed(3, a, down(voter("b", 1)), voter("d", 3))); got.Kind != Wait {
		t.Fatalf("removing a from {a, b down, d} would leave 1 of 2 healthy; got %+v", got)
	}
}

func TestCanRemoveVoter(t *testing.T) {
	cases := []struct {
		name   string
		ms     []Member
		victim Member
		want   bool
	}{
		{"healthy voter of 2", []Member{voter("a", 0), voter("b", 1)}, voter("b", 1), true},
		{"dead voter of 2", []Member{voter("a", 0), down(voter("b", 1))}, down(voter("b", 1)), false},
		{"dead voter of 3", []Member{voter("a", 0), voter("b", 1), down(voter("c", 2))}, down(voter("c", 2)), true},
		{"healthy voter of 3 with one dead", []Member{voter("a", 0), down(voter("b", 1)), voter("c", 2)}, voter("c", 2), false},
		{"only voter", []Member{voter("a", 0)}, voter("a", 0), false},
	}
	for _, tc := range cases {
		if got := canRemoveVoter(formed(1, tc.ms...), tc.victim.ID, tc.victim.Healthy); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}
