// Package crashpoint names the distinct steps of the operator's disruptive operations and lets
// a test build stop the process at one of them, to prove that a restart converges from there.
//
// The controllers call Hit(name) right after each step's write (to etcd or the API server) and
// before whatever records it. In a normal build Hit does nothing and is inlined away: only a
// binary built with the build tag "crashpoint" (make build's bin/manager-crashpoint) reads
// EnvVar, so a production binary cannot crash on purpose whatever its environment says.
package crashpoint

import (
	"fmt"
	"strconv"
	"strings"
)

// EnvVar arms a crashpoint build: "<name>" stops the process at the first hit of that step,
// "<name>:<n>" at the n-th.
const EnvVar = "ETCD_OPERATOR_CRASH_AT"

// BuildTag is the build tag of a binary that can stop at a crash point.
const BuildTag = "crashpoint"

// ExitCode is the status an armed process exits with, so a test tells its crash from any other.
const ExitCode = 86

// The operations, as the sweep's table names them.
const (
	OpBootstrap = "bootstrap"
	OpScaleUp   = "scale up"
	OpScaleDown = "scale down"
	OpPause     = "pause"
	OpResume    = "resume"
	OpRollout   = "rollout"
	OpTrust     = "trust rotation"
	OpAuth      = "auth enable"
	OpSnapshot  = "snapshot"
	OpRollback  = "rollback"
)

// The steps. Each name is hit right after the step's effect is written and before the
// operator records it, where a crash leaves the most to reconcile.
const (
	// SeedCreated: the seed EtcdMember exists; it is not marked voter nor has an initial cluster.
	SeedCreated = "bootstrap/seed-created"
	// MemberCreated: a new EtcdMember exists; etcd does not know it yet.
	MemberCreated = "scaleup/member-created"
	// LearnerAdded: etcd has the learner; its EtcdMember records neither ID nor initial cluster.
	LearnerAdded = "scaleup/learner-added"
	// Promoted: etcd made the learner a voter; its EtcdMember still says learner.
	Promoted = "scaleup/promoted"
	// MemberDeleted: the cluster controller deleted the EtcdMember being scaled away.
	MemberDeleted = "scaledown/member-deleted"
	// EtcdMemberRemoved: etcd removed the member; its EtcdMember still holds the finalizer.
	EtcdMemberRemoved = "scaledown/etcd-member-removed"
	// Parked: the last member is marked dormant; its Pod still runs.
	Parked = "pause/parked"
	// Woken: the dormant member is marked running again; it has no Pod yet.
	Woken = "resume/woken"
	// RestartGranted: a member may restart into the new template; its Pod is not deleted yet.
	RestartGranted = "rollout/restart-granted"
	// RolloutPodDeleted: an outdated Pod was deleted; its replacement is not created yet.
	RolloutPodDeleted = "rollout/pod-deleted"
	// RolloutLeaderMoved: leadership moved off the leader so it can restart last.
	RolloutLeaderMoved = "rollout/leader-moved"
	// TrustWidened: the active Secrets trust the old and the new CA; no member runs it yet.
	TrustWidened = "trust/widened"
	// TrustSwapped: the active Secrets serve the new certificates.
	TrustSwapped = "trust/swapped"
	// TrustNarrowed: the active Secrets trust only the new CA; members still mount both.
	TrustNarrowed = "trust/narrowed"
	// AuthUsersCreated: root and the operator's user exist; auth is still off.
	AuthUsersCreated = "auth/users-created"
	// AuthEnabled: etcd enforces auth; status.authEnabled and the root hash are not recorded.
	AuthEnabled = "auth/enabled"
	// SnapshotAgentCreated: the agent Pod exists; the snapshot's status still says Pending.
	SnapshotAgentCreated = "snapshot/agent-created"
	// SafetySnapshotCreated: an in-place rollback's safety EtcdSnapshot exists; the EtcdRestore
	// does not name it yet.
	SafetySnapshotCreated = "rollback/safety-snapshot-created"
	// TakenOver: the cluster carries the rollback's annotation; its members are all there.
	TakenOver = "rollback/taken-over"
	// MembersDeleted: the rollback deleted the cluster's EtcdMembers; they may not be gone yet.
	MembersDeleted = "rollback/members-deleted"
	// RestoreSeedCreated: the seed restoring the snapshot exists; the cluster is still held.
	RestoreSeedCreated = "rollback/seed-created"
	// HandedBack: the cluster controller has the cluster again; the EtcdRestore is not Complete.
	HandedBack = "rollback/handed-back"
)

// Point is one step of one operation.
type Point struct {
	Operation, Name string
}

// All lists every step the controllers hit, by operation in the order an operation takes them:
// the sweep iterates over it, and TestAllNamesUnique keeps it honest.
var All = []Point{
	{OpBootstrap, SeedCreated},
	{OpScaleUp, MemberCreated}, {OpScaleUp, LearnerAdded}, {OpScaleUp, Promoted},
	{OpScaleDown, MemberDeleted}, {OpScaleDown, EtcdMemberRemoved},
	{OpPause, Parked}, {OpResume, Woken},
	{OpRollout, RestartGranted}, {OpRollout, RolloutPodDeleted}, {OpRollout, RolloutLeaderMoved},
	{OpTrust, TrustWidened}, {OpTrust, TrustSwapped}, {OpTrust, TrustNarrowed},
	{OpAuth, AuthUsersCreated}, {OpAuth, AuthEnabled},
	{OpSnapshot, SnapshotAgentCreated},
	{OpRollback, SafetySnapshotCreated}, {OpRollback, TakenOver}, {OpRollback, MembersDeleted},
	{OpRollback, RestoreSeedCreated}, {OpRollback, HandedBack},
}

// Spec is what EnvVar asks for: stop at the Nth hit of Name.
type Spec struct {
	Name string
	Nth  int
}

// String is the EnvVar value that arms s.
func (s Spec) String() string {
	if s.Nth <= 1 {
		return s.Name
	}
	return s.Name + ":" + strconv.Itoa(s.Nth)
}

// Parse reads an EnvVar value; "" arms nothing. A name not in All is refused, so a typo in a
// test fails loudly instead of never crashing.
func Parse(v string) (Spec, error) {
	if v == "" {
		return Spec{}, nil
	}
	name, nth, found := strings.Cut(v, ":")
	s := Spec{Name: name, Nth: 1}
	if found {
		n, err := strconv.Atoi(nth)
		if err != nil || n < 1 {
			return Spec{}, fmt.Errorf("%s=%q: the hit count must be a positive integer", EnvVar, v)
		}
		s.Nth = n
	}
	if !Known(name) {
		return Spec{}, fmt.Errorf("%s=%q: no crash point is named %q", EnvVar, v, name)
	}
	return s, nil
}

// Known reports whether name is one of All.
func Known(name string) bool {
	for _, p := range All {
		if p.Name == name {
			return true
		}
	}
	return false
}

// Trigger counts the hits of its Spec's step and says when the process must stop.
type Trigger struct {
	spec Spec
	hits int
}

// NewTrigger arms a trigger for s (a zero Spec never fires).
func NewTrigger(s Spec) *Trigger { return &Trigger{spec: s} }

// Fire counts a hit of name and reports whether it is the one to stop at. Callers serialise it.
func (t *Trigger) Fire(name string) bool {
	if t.spec.Name == "" || name != t.spec.Name {
		return false
	}
	t.hits++
	return t.hits == t.spec.Nth
}
