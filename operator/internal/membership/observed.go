// Package membership decides the next membership action of an etcd cluster. Decide is a pure
// function of what the controller observed (EtcdMember objects, their Pods, etcd's member list
// and per-member status), so every rule is pinned by a table test without Kubernetes or etcd.
package membership

import "time"

// Member is one EtcdMember as the cluster controller sees it, joined with etcd's view of it.
type Member struct {
	Name    string
	Created time.Time
	Seed    bool
	// Deleting: the EtcdMember has a deletion timestamp (its finalizer is removing it).
	Deleting bool
	Dormant  bool
	// Pending: not yet registered in etcd (spec.initialCluster is empty).
	Pending bool
	// Ready mirrors the member's Ready condition (Pod Ready and member ID known).
	Ready bool

	// InEtcd: etcd's member list has this member (matched by ID or peer URL).
	InEtcd    bool
	ID        uint64
	IsLearner bool
	IsLeader  bool
	// Healthy: the member answered a Status call.
	Healthy bool

	// Voter: the operator recorded it as a voter (status.isVoter), known when etcd is not.
	Voter bool
	// ForceNewCluster: it is (being) restarted with --force-new-cluster (a quorum-loss rebuild).
	ForceNewCluster bool

	// Broken is why the member must be replaced ("" when it need not): a tmpfs member whose
	// Pod (and so its data) is gone, or whose node has been NotReady past the grace period, or
	// a member crash-looping with data it cannot start from.
	Broken string
}

// Observed is the state the decision is made from.
type Observed struct {
	Desired int32
	// Formed: the cluster ID has been latched, i.e. the seed formed the cluster once.
	Formed bool
	// Reachable: etcd's member list could be read.
	Reachable bool
	Members   []Member
	// Strays are etcd members that no EtcdMember stands for (e.g. a learner whose object was
	// deleted before its Pod started).
	Strays []Stray
	// QuorumLoss is spec.quorumLoss: what to do once a majority of the voters lost its data.
	QuorumLoss QuorumLossPolicy
	// Listed is how many members etcd's member list has (0 when unreachable).
	Listed int
}

// QuorumLossPolicy mirrors v1alpha2.QuorumLossPolicy.
type QuorumLossPolicy string

const (
	QuorumLossWait        QuorumLossPolicy = "Wait"
	QuorumLossRebuild     QuorumLossPolicy = "RebuildFromSurvivor"
	QuorumLossRestoreLast QuorumLossPolicy = "RestoreLatestSnapshot"
)

// Stray is an etcd member without an EtcdMember.
type Stray struct {
	ID        uint64
	IsLearner bool
	Healthy   bool
}

// Kind of action.
type Kind string

const (
	// None: nothing to do; the cluster is where it should be.
	None Kind = "None"
	// Wait: something is in flight; look again later.
	Wait Kind = "Wait"
	// Bootstrap creates the seed member.
	Bootstrap Kind = "Bootstrap"
	// AddMember creates a new pending EtcdMember.
	AddMember Kind = "AddMember"
	// CompletePending registers a pending member as a learner and records its initial cluster.
	CompletePending Kind = "CompletePending"
	// Promote makes a caught-up learner a voter.
	Promote Kind = "Promote"
	// MoveLeader hands leadership to Target before the leader is removed.
	MoveLeader Kind = "MoveLeader"
	// RemoveMember deletes an EtcdMember; its finalizer removes it from etcd.
	RemoveMember Kind = "RemoveMember"
	// ReplaceMember deletes a broken EtcdMember; a fresh learner fills the gap afterwards.
	ReplaceMember Kind = "ReplaceMember"
	// RemoveStray removes an etcd member that no EtcdMember stands for.
	RemoveStray Kind = "RemoveStray"
	// Park makes the last member dormant (scale to zero).
	Park Kind = "Park"
	// Wake brings a dormant member back (resume).
	Wake Kind = "Wake"
	// AllMembersLost is terminal: the cluster formed once and no member with data remains.
	AllMembersLost Kind = "AllMembersLost"
	// RebuildFromSurvivor restarts the survivors' best member with --force-new-cluster and
	// removes the members whose data is lost (spec.quorumLoss=RebuildFromSurvivor).
	RebuildFromSurvivor Kind = "RebuildFromSurvivor"
	// EndForceNewCluster clears --force-new-cluster once the rebuilt cluster has formed.
	EndForceNewCluster Kind = "EndForceNewCluster"
	// RestoreLatestSnapshot rolls the cluster back to its newest Complete snapshot
	// (spec.quorumLoss=RestoreLatestSnapshot).
	RestoreLatestSnapshot Kind = "RestoreLatestSnapshot"
)

// Action is the one next step. Member names the EtcdMember it applies to, ID the etcd member.
type Action struct {
	Kind    Kind
	Member  string
	ID      uint64
	Target  uint64
	Reason  string
	Message string
}
