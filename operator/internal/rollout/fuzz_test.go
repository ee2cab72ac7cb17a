package rollout

import (
	"fmt"
	"testing"
)

// membersFrom builds a member list from fuzz bytes: unique IDs, at most one leader.
func membersFrom(data []byte) []Member {
	if len(data) == 0 {
		return nil
	}
	n, data := int(data[0]%6), data[1:]
	var ms []Member
	leader := false
	for i := 0; i < n && i < len(data); i++ {
		b := data[i]
		m := Member{Name: fmt.Sprintf("m%d", i), ID: uint64(i + 1), Learner: b&0x02 != 0, Ready: b&0x04 != 0,
			Healthy: b&0x08 != 0, Outdated: b&0x10 != 0, Granted: b&0x20 != 0, Stale: b&0x40 != 0}
		if b&0x01 != 0 && !leader && !m.Learner {
			m.Leader, leader = true, true
		}
		ms = append(ms, m)
	}
	return ms
}

// FuzzDecide: one restart at a time, a serving member restarted only when every member is
// ready, healthy and a voter, the leader never restarted while it leads others (leadership
// moves first, to another member), and only outdated members restarted.
func FuzzDecide(f *testing.F) {
	for _, seed := range [][]byte{
		{3, 0x1d, 0x1c, 0x1c}, // three outdated, healthy; leader first in the list
		{3, 0x0d, 0x1c, 0x0c}, // one outdated follower
		{3, 0x1d, 0x0c, 0x0c}, // the leader is the last outdated
		{3, 0x1d, 0x3c, 0x0c}, // a restart in flight
		{3, 0x19, 0x14, 0x0c}, // an outdated member not ready
		{1, 0x1d},             // the only member
		{2, 0x1d, 0x1e},       // a learner
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ms := membersFrom(data)
		a := Decide(ms)
		byName := map[string]Member{}
		granted, stale, allServing := false, false, true
		for _, m := range ms {
			byName[m.Name] = m
			granted = granted || m.Granted
			stale = stale || m.Stale
			allServing = allServing && m.Ready && m.Healthy && !m.Learner
		}
		switch a.Kind {
		case Restart:
			m, ok := byName[a.Member]
			switch {
			case !ok || !m.Outdated:
				t.Fatalf("restart of %q, not an outdated member: %+v", a.Member, ms)
			case granted || stale:
				t.Fatalf("restart of %s while another is granted or a member is stale: %+v", a.Member, ms)
			case m.Ready && !allServing:
				t.Fatalf("restart of serving %s while not every member serves: %+v", a.Member, ms)
			case m.Ready && m.Leader && len(ms) > 1:
				t.Fatalf("restart of the leader %s before leadership moved: %+v", a.Member, ms)
			}
		case MoveLeader:
			m, ok := byName[a.Member]
			if !ok || !m.Leader || granted {
				t.Fatalf("leadership moved off %q, not the leader, or during a restart: %+v", a.Member, ms)
			}
			target := false
			for _, o := range ms {
				target = target || (o.ID == a.Target && !o.Leader && !o.Learner)
			}
			if !target {
				t.Fatalf("leadership moved to %d, not a voter other than the leader: %+v", a.Target, ms)
			}
		case None:
			for _, m := range ms {
				if m.Outdated || m.Granted {
					t.Fatalf("None with %s outdated or granted: %+v", m.Name, ms)
				}
			}
		}
	})
}
