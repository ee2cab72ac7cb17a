package membership

import (
	"fmt"
	"testing"
	"time"
)

// observedFrom builds an Observed from fuzz bytes, shaped like what the cluster controller can
// see: unique etcd IDs, at most one leader (a voter in etcd), learners and voters only in etcd.
func observedFrom(data []byte) Observed {
	next := func() byte {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return b
	}
	head := next()
	o := Observed{Desired: int32(head % 8), Formed: head&0x08 != 0, Reachable: head&0x10 != 0,
		QuorumLoss: []QuorumLossPolicy{QuorumLossWait, QuorumLossRebuild, QuorumLossRestoreLast}[int(head>>5)%3]}
	n := int(next() % 7)
	leader := -1
	for i := range n {
		f, g := next(), next()
		m := Member{Name: fmt.Sprintf("m%d", i), Created: time.Unix(int64(i), 0), Seed: i == 0,
			Deleting: f&0x01 != 0, Dormant: f&0x02 != 0, Pending: f&0x04 != 0, Ready: f&0x08 != 0,
			InEtcd: f&0x10 != 0, IsLearner: f&0x20 != 0, Healthy: f&0x40 != 0, Voter: f&0x80 != 0,
			ForceNewCluster: g&0x01 != 0}
		if m.InEtcd {
			m.ID = uint64(i + 1)
		} else {
			m.IsLearner, m.Healthy = false, false
		}
		if m.Pending {
			m.InEtcd, m.ID, m.IsLearner, m.Healthy, m.Voter = g&0x02 != 0 && f&0x10 != 0, 0, false, false, false
			if m.InEtcd {
				m.ID, m.IsLearner = uint64(i+1), true // the operator stopped mid-add
			}
		}
		switch g >> 2 & 0x3 {
		case 1:
			m.Broken = "crash looping"
		case 2:
			m.Broken = DataLostPrefix + "PVC gone"
		}
		if g&0x10 != 0 && leader < 0 && m.InEtcd && !m.IsLearner {
			m.IsLeader, leader = true, i
		}
		o.Members = append(o.Members, m)
	}
	for i := range int(next() % 3) {
		s := next()
		o.Strays = append(o.Strays, Stray{ID: uint64(100 + i), IsLearner: s&1 != 0, Healthy: s&2 != 0})
	}
	if o.Reachable {
		for _, m := range o.Members {
			if m.InEtcd {
				o.Listed++
			}
		}
		o.Listed += len(o.Strays)
	}
	return o
}

// voters counts etcd's voters and the healthy ones other than id, as etcd would.
func votersWithout(o Observed, id uint64) (voters, healthyOthers int) {
	for _, m := range o.Members {
		if m.InEtcd && !m.IsLearner && !m.Dormant {
			voters++
			if m.Healthy && m.ID != id {
				healthyOthers++
			}
		}
	}
	for _, s := range o.Strays {
		if !s.IsLearner {
			voters++
			if s.Healthy && s.ID != id {
				healthyOthers++
			}
		}
	}
	return voters, healthyOthers
}

func memberNamed(o Observed, name string) (Member, bool) {
	for _, m := range o.Members {
		if m.Name == name {
			return m, true
		}
	}
	return Member{}, false
}

// FuzzDecide: whatever is observed, Decide does not panic and keeps its promises: one change at
// a time (nothing starts while a member leaves, is pending or is a learner), never a removal
// that leaves fewer healthy voters than a majority, leadership handed only to a healthy voter,
// promotion only of a learner.
func FuzzDecide(f *testing.F) {
	for _, seed := range [][]byte{
		{0x1b, 3, 0xd8, 0x10, 0xd8, 0, 0xd8, 0},       // three healthy voters, one leader, desired 3
		{0x1d, 3, 0xd8, 0x10, 0xd8, 0, 0xd8, 0},       // ... scale to 5
		{0x19, 3, 0xd8, 0x10, 0xd8, 0, 0x98, 0},       // ... scale to 1 with one voter unhealthy
		{0x1b, 3, 0xd8, 0x18, 0xd8, 0, 0x98, 0x08},    // a broken voter: data lost
		{0x3b, 3, 0x98, 0x08, 0x98, 0x08, 0xd8, 0x10}, // quorum lost for good, rebuild
		{0x1b, 4, 0xd8, 0x10, 0xd8, 0, 0xd8, 0, 0x7c, 0x02},
		{0x1b, 2, 0xd8, 0x10, 0xd9, 0, 1, 1},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		o := observedFrom(data)
		a := Decide(o)
		target, hasTarget := memberNamed(o, a.Member)
		inFlight := false
		for _, m := range o.Members {
			if m.Deleting {
				inFlight = true
			}
		}
		switch a.Kind {
		case AddMember:
			for _, m := range Running(o.Members) {
				if m.Pending || m.IsLearner || !m.Ready {
					t.Fatalf("AddMember while %s is pending, a learner or not ready: %+v", m.Name, o)
				}
			}
			if inFlight || int32(len(Running(o.Members))) >= o.Desired {
				t.Fatalf("AddMember with a member leaving or enough members: %+v", o)
			}
		case Promote:
			if !hasTarget || !target.IsLearner || inFlight {
				t.Fatalf("Promote of %q, not a learner or while a member leaves: %+v", a.Member, o)
			}
		case MoveLeader:
			if !hasTarget || !target.IsLeader {
				t.Fatalf("MoveLeader from %q, not the leader: %+v", a.Member, o)
			}
			ok := false
			for _, m := range o.Members {
				ok = ok || (m.ID == a.Target && m.InEtcd && !m.IsLearner && m.Healthy && m.Name != a.Member)
			}
			if !ok {
				t.Fatalf("leadership handed to %d, not a healthy voter: %+v", a.Target, o)
			}
		case RemoveMember, ReplaceMember, RemoveStray:
			removesVoter := false
			if a.Kind == RemoveStray {
				for _, s := range o.Strays {
					removesVoter = removesVoter || (s.ID == a.ID && !s.IsLearner)
				}
			} else {
				if !hasTarget {
					t.Fatalf("%s of unknown member %q", a.Kind, a.Member)
				}
				removesVoter = target.InEtcd && !target.IsLearner && !target.Dormant
			}
			if removesVoter && o.Reachable {
				// A strict majority of the voters left must be healthy, counted here without
				// Quorum so that a wrong Quorum cannot agree with itself.
				voters, healthyOthers := votersWithout(o, a.ID)
				if 2*healthyOthers <= voters-1 {
					t.Fatalf("%s of voter %d leaves %d healthy of %d voters: %+v", a.Kind, a.ID, healthyOthers, voters-1, o)
				}
			}
		}
		if inFlight {
			switch a.Kind {
			case AddMember, CompletePending, Promote, RemoveMember, MoveLeader, Bootstrap, Wake, Park:
				t.Fatalf("%s started while a member is leaving: %+v", a.Kind, o)
			}
		}
	})
}
