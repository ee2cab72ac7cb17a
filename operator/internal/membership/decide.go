package membership

import (
	"fmt"
	"slices"
	"strings"
)

// Decide returns the single next membership action. Membership changes are serialised: while
// any change is in flight (a member deleting, a pending member, a learner) nothing else starts.
func Decide(o Observed) Action {
	// A quorum lost for good comes first: a member that is leaving needs MemberRemove, which
	// needs quorum, so waiting for it to leave would wait forever.
	if o.Formed {
		if a, ok := decideQuorumLoss(o); ok {
			return a
		}
	}
	if names := deleting(o.Members); len(names) > 0 {
		return wait("MemberDeleting", "waiting for member %s to leave", strings.Join(names, ", "))
	}
	if !o.Formed {
		return decideUnformed(o)
	}
	if a, ok := decidePause(o); ok {
		return a
	}
	if !o.Reachable {
		return wait("ClusterUnreachable", "etcd's member list cannot be read")
	}
	for _, step := range []func(Observed) (Action, bool){
		removeStray, replaceDropped, handleLearner, completePending, replaceBroken, scaleUp, scaleDown,
	} {
		if a, ok := step(o); ok {
			return a
		}
	}
	return Action{Kind: None, Reason: "Reconciled"}
}

func decideUnformed(o Observed) Action {
	switch {
	case o.Desired == 0 && len(o.Members) == 0:
		return Action{Kind: None, Reason: "Paused", Message: "replicas is 0; no data written"}
	case len(o.Members) == 0:
		return Action{Kind: Bootstrap, Reason: "Bootstrapping"}
	}
	// The operator stopped between creating the seed and recording its initial cluster.
	if i := slices.IndexFunc(o.Members, func(m Member) bool { return m.Seed && m.Pending }); i >= 0 {
		return Action{Kind: Bootstrap, Member: o.Members[i].Name, Reason: "Bootstrapping"}
	}
	switch {
	case !slices.ContainsFunc(o.Members, func(m Member) bool { return m.Seed }):
		return wait("WaitingForSeed", "no seed member; delete the members to bootstrap again")
	default:
		return wait("WaitingForSeed", "waiting for the seed to form the cluster")
	}
}

// decidePause handles what needs no etcd: all members lost, resume, and the final 1->0 step.
func decidePause(o Observed) (Action, bool) {
	running := Running(o.Members)
	dormant := slices.IndexFunc(o.Members, func(m Member) bool { return m.Dormant })
	switch {
	case allLost(o.Members):
		return Action{Kind: AllMembersLost, Reason: "AllMembersLost",
			Message: "the cluster formed once but no member with data remains; restore from a snapshot or recreate the cluster"}, true
	case o.Desired > 0 && dormant >= 0:
		return Action{Kind: Wake, Member: o.Members[dormant].Name, Reason: "Resuming"}, true
	case o.Desired == 0 && len(running) == 1:
		return Action{Kind: Park, Member: running[0].Name, Reason: "Paused"}, true
	case o.Desired == 0 && len(running) == 0:
		return Action{Kind: None, Reason: "Paused"}, true
	}
	return Action{}, false
}

// completePending registers a pending member, unless the target shrank below it meanwhile.
func completePending(o Observed) (Action, bool) {
	if int32(len(Running(o.Members))) > o.Desired {
		return Action{}, false
	}
	for _, m := range o.Members {
		if m.Pending && !m.Dormant {
			return Action{Kind: CompletePending, Member: m.Name, Reason: "ScalingUp"}, true
		}
	}
	return Action{}, false
}

// removeStray removes etcd members nobody manages; a stray learner blocks every future add.
func removeStray(o Observed) (Action, bool) {
	for _, s := range o.Strays {
		if s.IsLearner || canRemoveVoter(o, s.ID, s.Healthy) {
			return Action{Kind: RemoveStray, ID: s.ID, Reason: "StrayMember",
				Message: fmt.Sprintf("etcd member %016x has no EtcdMember", s.ID)}, true
		}
	}
	if len(o.Strays) > 0 {
		return wait("QuorumGate", "etcd member %016x has no EtcdMember but removing it would lose quorum", o.Strays[0].ID), true
	}
	return Action{}, false
}

// replaceDropped replaces members that were registered but are no longer in etcd (removed
// behind the operator's back): their data belongs to a removed identity and cannot rejoin.
func replaceDropped(o Observed) (Action, bool) {
	for _, m := range Running(o.Members) {
		if !m.Pending && !m.InEtcd {
			return Action{Kind: ReplaceMember, Member: m.Name, Reason: "MemberRemovedFromEtcd",
				Message: fmt.Sprintf("member %s is no longer in etcd's member list", m.Name)}, true
		}
	}
	return Action{}, false
}

// ReasonLearnerCatchingUp is the Wait of a learner whose etcd does not answer yet: it will
// within a second or two of its Pod starting, so the caller looks again soon.
const ReasonLearnerCatchingUp = "LearnerCatchingUp"

// handleLearner finishes the one learner etcd allows before anything else changes. A pending
// member that is already a learner (the operator stopped mid-add) is completed, not awaited.
func handleLearner(o Observed) (Action, bool) {
	if int32(len(Running(o.Members))) > o.Desired {
		return Action{}, false // shrinking: scaleDown removes the learner first
	}
	for _, m := range Running(o.Members) {
		if !m.IsLearner || m.Pending {
			continue
		}
		switch {
		case m.Broken != "":
			return Action{Kind: ReplaceMember, Member: m.Name, ID: m.ID, Reason: "BrokenLearner", Message: m.Broken}, true
		case m.Healthy || m.Ready:
			// Its etcd answers (or its Pod's probe says it serves, which needs no DNS lookup of
			// a name cluster DNS may still cache as missing): try now. etcd itself refuses to
			// promote a learner that has not caught up, and that is retried.
			return Action{Kind: Promote, Member: m.Name, ID: m.ID, Reason: "ScalingUp"}, true
		default:
			return wait(ReasonLearnerCatchingUp, "learner %s is catching up", m.Name), true
		}
	}
	return Action{}, false
}

// replaceBroken replaces one broken voter when the others keep quorum without it.
func replaceBroken(o Observed) (Action, bool) {
	broken := slices.DeleteFunc(Running(o.Members), func(m Member) bool { return m.Broken == "" })
	for _, m := range broken {
		if canRemoveVoter(o, m.ID, m.Healthy) {
			if a, ok := leaderFirst(o, m); ok {
				return a, true
			}
			return Action{Kind: ReplaceMember, Member: m.Name, ID: m.ID, Reason: "ReplacingMember", Message: m.Broken}, true
		}
	}
	if len(broken) > 0 {
		return wait("QuorumGate", "member %s is broken (%s) but removing it would lose quorum", broken[0].Name, broken[0].Broken), true
	}
	return Action{}, false
}

func scaleUp(o Observed) (Action, bool) {
	run := Running(o.Members)
	if int32(len(run)) >= o.Desired {
		return Action{}, false
	}
	for _, m := range run {
		if !m.Ready {
			return wait("WaitingForMembers", "member %s is not ready", m.Name), true
		}
	}
	return Action{Kind: AddMember, Reason: "ScalingUp"}, true
}

func scaleDown(o Observed) (Action, bool) {
	run := Running(o.Members)
	if int32(len(run)) <= o.Desired {
		return Action{}, false
	}
	victim := pickVictim(run)
	if victim.InEtcd && !victim.IsLearner && !canRemoveVoter(o, victim.ID, victim.Healthy) {
		return wait("QuorumGate", "removing %s now would lose quorum", victim.Name), true
	}
	if a, ok := leaderFirst(o, victim); ok {
		return a, true
	}
	return Action{Kind: RemoveMember, Member: victim.Name, ID: victim.ID, Reason: "ScalingDown"}, true
}

// pickVictim prefers pending members and learners, then members that are unhealthy or not ready, then followers
// over the leader; among equals the newest goes first (the seed, oldest, goes last).
func pickVictim(run []Member) Member {
	rank := func(m Member) int {
		switch {
		case m.Pending:
			return 0
		case m.IsLearner:
			return 1
		case !m.Healthy || !m.Ready:
			return 2
		case !m.IsLeader:
			return 3
		}
		return 4
	}
	return slices.MinFunc(run, func(a, b Member) int {
		if d := rank(a) - rank(b); d != 0 {
			return d
		}
		if c := b.Created.Compare(a.Created); c != 0 {
			return c
		}
		return strings.Compare(b.Name, a.Name)
	})
}

// leaderFirst moves leadership to a healthy follower before the leader is removed, so the
// cluster does not sit through an election timeout.
func leaderFirst(o Observed, victim Member) (Action, bool) {
	if !victim.IsLeader {
		return Action{}, false
	}
	for _, m := range Running(o.Members) {
		if m.Name != victim.Name && m.InEtcd && !m.IsLearner && m.Healthy {
			return Action{Kind: MoveLeader, Member: victim.Name, ID: victim.ID, Target: m.ID, Reason: "MovingLeader",
				Message: fmt.Sprintf("moving leadership from %s to %s before removing it", victim.Name, m.Name)}, true
		}
	}
	return Action{}, false
}

// canRemoveVoter: the removal must commit under the current configuration (a quorum of the
// voters is healthy) and leave a healthy quorum of the smaller one.
func canRemoveVoter(o Observed, id uint64, victimHealthy bool) bool {
	voters, healthyOthers := 0, 0
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
	healthyNow := healthyOthers
	if victimHealthy {
		healthyNow++
	}
	return healthyNow >= Quorum(voters) && healthyOthers >= Quorum(voters-1)
}

// Quorum is the majority of n voters: the fewest that must agree for etcd to make progress.
func Quorum(n int) int { return n/2 + 1 }

// Running are the members that are neither parked nor leaving.
func Running(ms []Member) []Member {
	var out []Member
	for _, m := range ms {
		if !m.Dormant && !m.Deleting {
			out = append(out, m)
		}
	}
	return out
}

func deleting(ms []Member) []string {
	var out []string
	for _, m := range ms {
		if m.Deleting {
			out = append(out, m.Name)
		}
	}
	return out
}

// allLost: no member is left, or every member is a tmpfs member whose data is gone.
func allLost(ms []Member) bool {
	for _, m := range ms {
		if m.Dormant || m.Broken == "" || !strings.HasPrefix(m.Broken, DataLostPrefix) {
			return false
		}
	}
	return true
}

// DataLostPrefix starts the Broken reason of members whose data is gone for good.
const DataLostPrefix = "data lost: "

func wait(reason, format string, args ...any) Action {
	return Action{Kind: Wait, Reason: reason, Message: fmt.Sprintf(format, args...)}
}
