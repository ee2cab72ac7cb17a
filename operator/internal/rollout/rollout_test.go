package rollout

import "testing"

func ok(name string, id uint64) Member { return Member{Name: name, ID: id, Ready: true, Healthy: true} }
func old(m Member) Member              { m.Outdated = true; return m }
func lead(m Member) Member             { m.Leader = true; return m }
func granted(m Member) Member          { m.Granted = true; return m }
func down(m Member) Member             { m.Ready, m.Healthy = false, false; return m }
func stale(m Member) Member            { m.Stale = true; return m }
func learner(m Member) Member          { m.Learner = true; return m }

func TestDecide(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ms     []Member
		kind   Kind
		member string
		target uint64
	}{
		{name: "all updated", ms: []Member{lead(ok("a", 1)), ok("b", 2), ok("c", 3)}, kind: None},
		{name: "empty", kind: None},
		{name: "follower first", ms: []Member{lead(old(ok("a", 1))), old(ok("b", 2)), ok("c", 3)}, kind: Restart, member: "b"},
		{name: "first outdated follower in order", ms: []Member{old(ok("c", 3)), lead(ok("a", 1)), old(ok("b", 2))}, kind: Restart, member: "c"},
		{name: "one restart at a time", ms: []Member{lead(old(ok("a", 1))), granted(old(ok("b", 2))), old(ok("c", 3))}, kind: Wait},
		{name: "granted but not yet gone is still in flight even when ready", ms: []Member{granted(old(ok("b", 2))), lead(ok("a", 1))}, kind: Wait},
		{name: "restarted member not ready yet", ms: []Member{lead(old(ok("a", 1))), granted(down(ok("b", 2))), old(ok("c", 3))}, kind: Wait},
		{name: "last restart still in flight", ms: []Member{lead(ok("a", 1)), granted(down(ok("b", 2)))}, kind: Wait},
		{name: "member down for another reason", ms: []Member{lead(old(ok("a", 1))), down(ok("b", 2)), old(ok("c", 3))}, kind: Wait},
		{name: "member not answering etcd", ms: []Member{lead(old(ok("a", 1))), {Name: "b", ID: 2, Ready: true}, old(ok("c", 3))}, kind: Wait},
		{name: "learner present", ms: []Member{lead(old(ok("a", 1))), ok("b", 2), learner(ok("c", 3))}, kind: Wait},
		{name: "outdated member that does not serve goes at once", ms: []Member{lead(old(ok("a", 1))), old(down(ok("b", 2))), ok("c", 3)}, kind: Restart, member: "b"},
		{name: "stale status waits", ms: []Member{lead(old(ok("a", 1))), stale(ok("b", 2))}, kind: Wait},
		{name: "leader last, after moving leadership", ms: []Member{lead(old(ok("a", 1))), ok("b", 2), ok("c", 3)}, kind: MoveLeader, member: "a", target: 2},
		{name: "leader moved to an updated member", ms: []Member{ok("b", 2), lead(old(ok("a", 1)))}, kind: MoveLeader, member: "a", target: 2},
		{name: "single member restarts in place", ms: []Member{lead(old(ok("a", 1)))}, kind: Restart, member: "a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Decide(tc.ms)
			if got.Kind != tc.kind || got.Member != tc.member && tc.member != "" || got.Target != tc.target {
				t.Fatalf("Decide = %+v, want %s %s target %d", got, tc.kind, tc.member, tc.target)
			}
			if got.Kind != None && got.Message == "" {
				t.Error("every step needs a message")
			}
		})
	}
}
