// Package rollout decides the next step of a rolling update: which member's Pod may be
// restarted into the current template. Decide is a pure function of the observed members, so
// every rule (one at a time, only when all voters are healthy, followers first, the leader last
// after leadership moved to an updated member) is pinned by a table test.
package rollout

import (
	"fmt"
	"slices"
	"strings"
)

// Member is one running EtcdMember as the rollout sees it.
type Member struct {
	Name    string
	ID      uint64
	Leader  bool
	Learner bool
	// Ready: the member's Ready condition; Healthy: it answered etcd's Status call.
	Ready   bool
	Healthy bool
	// Outdated: its Pod runs another template revision than its spec asks for.
	Outdated bool
	// Granted: the restart into the current revision was granted and has not completed (the
	// grant is withdrawn once the member runs the new revision and is ready again).
	Granted bool
	// Stale: the member controller has not yet reported on the member's current spec.
	Stale bool
}

// Kind of step.
type Kind string

const (
	// None: every member runs the current template.
	None Kind = "None"
	// Wait: a restart is in flight or the cluster is not healthy enough for the next one.
	Wait Kind = "Wait"
	// Restart grants Member the restart of its Pod.
	Restart Kind = "Restart"
	// MoveLeader hands leadership to Target before the leader is restarted.
	MoveLeader Kind = "MoveLeader"
)

// Action is the decided step.
type Action struct {
	Kind    Kind
	Member  string
	Target  uint64
	Message string
}

// Decide returns the next step of the rollout over ms.
func Decide(ms []Member) Action {
	outdated := slices.DeleteFunc(slices.Clone(ms), func(m Member) bool { return !m.Outdated })
	inFlight, restarting := find(ms, func(m Member) bool { return m.Granted })
	if len(outdated) == 0 && !restarting {
		return Action{Kind: None}
	}
	if m, ok := find(ms, func(m Member) bool { return m.Stale }); ok {
		return wait("waiting for member %s to report its new template", m.Name)
	}
	if restarting {
		return wait("restarting member %s", inFlight.Name)
	}
	// A member that does not serve anyway costs no availability when restarted, and the new
	// template may be what it needs (e.g. an image that could not be pulled).
	if m, ok := find(outdated, func(m Member) bool { return !m.Ready }); ok {
		return Action{Kind: Restart, Member: m.Name, Message: fmt.Sprintf("restarting member %s, which is not ready", m.Name)}
	}
	if names := unhealthy(ms); len(names) > 0 {
		return wait("waiting for %s to be healthy before the next restart", strings.Join(names, ", "))
	}
	if m, ok := find(outdated, func(m Member) bool { return !m.Leader }); ok {
		return Action{Kind: Restart, Member: m.Name, Message: fmt.Sprintf("restarting follower %s", m.Name)}
	}
	leader := outdated[0]
	if len(ms) == 1 {
		return Action{Kind: Restart, Member: leader.Name, Message: fmt.Sprintf("restarting the only member %s", leader.Name)}
	}
	target := ms[slices.IndexFunc(ms, func(m Member) bool { return !m.Leader })]
	return Action{Kind: MoveLeader, Member: leader.Name, Target: target.ID,
		Message: fmt.Sprintf("moving leadership from %s to updated member %s before restarting it", leader.Name, target.Name)}
}

// unhealthy names the members that keep the next restart back: not ready, not answering, or
// still a learner (a restart then could cost quorum or a member still catching up).
func unhealthy(ms []Member) []string {
	var out []string
	for _, m := range ms {
		if !m.Ready || !m.Healthy || m.Learner {
			out = append(out, m.Name)
		}
	}
	return out
}

func find(ms []Member, pred func(Member) bool) (Member, bool) {
	i := slices.IndexFunc(ms, pred)
	if i < 0 {
		return Member{}, false
	}
	return ms[i], true
}

func wait(format string, args ...any) Action {
	return Action{Kind: Wait, Message: fmt.Sprintf(format, args...)}
}
