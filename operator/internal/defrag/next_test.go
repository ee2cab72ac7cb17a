package defrag

import "testing"

func TestNext(t *testing.T) {
	for _, tc := range []struct {
		name string
		ms   []Live
		want Action
	}{
		{"nothing pending", []Live{{Name: "a", ID: 1}, {Name: "b", ID: 2, Leader: true}}, Action{Kind: Done}},
		{"a follower first", []Live{{Name: "a", ID: 1, Pending: true}, {Name: "b", ID: 2, Leader: true, Pending: true}},
			Action{Kind: Defragment, Member: "a"}},
		{"the leader hands over to a defragmented follower",
			[]Live{{Name: "a", ID: 1}, {Name: "c", ID: 3, Pending: true, Leader: true}, {Name: "b", ID: 2, Pending: false}},
			Action{Kind: MoveLeader, Member: "c", Target: 1}},
		{"prefers a done follower over a pending one",
			[]Live{{Name: "c", ID: 3, Pending: true, Leader: true}, {Name: "a", ID: 1, Pending: true}, {Name: "b", ID: 2}},
			Action{Kind: MoveLeader, Member: "c", Target: 2}},
		{"leadership moved to a pending member mid-run: it hands over again",
			[]Live{{Name: "a", ID: 1}, {Name: "b", ID: 2, Pending: true, Leader: true}, {Name: "c", ID: 3, Pending: true}},
			Action{Kind: MoveLeader, Member: "b", Target: 1}},
		{"a learner never takes leadership", []Live{{Name: "l", ID: 9, Learner: true}, {Name: "a", ID: 1, Leader: true, Pending: true}},
			Action{Kind: Defragment, Member: "a"}},
		{"the only member", []Live{{Name: "a", ID: 1, Leader: true, Pending: true}}, Action{Kind: Defragment, Member: "a"}},
	} {
		if got := Next(tc.ms); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
