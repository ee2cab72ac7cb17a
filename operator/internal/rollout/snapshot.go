package rollout

import "fmt"

// Since is when every member started running one minor (v1alpha2.MinorRecord, without the API).
type Since struct {
	Minor     string
	RaftIndex int64
	Upgraded  bool
}

// DefaultSnapshotCount is etcd's --snapshot-count default for a minor: 100000 before 3.6,
// 10000 since.
func DefaultSnapshotCount(minor string) int64 {
	if _, m, ok := majorMinor(minor); ok && m < 6 {
		return 100000
	}
	return 10000
}

// SnapshotWait says why restarting members into target must wait, or "" when it need not: after
// an upgrade to since.Minor, a member's WAL may still hold entries the older minor wrote until
// it takes a snapshot, and the minor after cannot replay them (etcd 3.7 panics on what 3.5 wrote).
// A member snapshots every snapshotCount applied entries, so once the raft index is past
// since.RaftIndex + snapshotCount every member has snapshotted on since.Minor.
func SnapshotWait(target string, since Since, raftIndex, snapshotCount int64) string {
	_, tMinor, ok := majorMinor(target)
	_, sMinor, ok2 := majorMinor(since.Minor)
	if !ok || !ok2 || !since.Upgraded || tMinor <= sMinor {
		return ""
	}
	need := since.RaftIndex + snapshotCount + 1
	if raftIndex >= need {
		return ""
	}
	return fmt.Sprintf("every member must take a snapshot on etcd %s before %s (a member's WAL may hold entries the minor before %s wrote, which %s cannot replay): %d more writes to the cluster (its --snapshot-count is %d, spec.options.snapshotCount)",
		since.Minor, target, since.Minor, target, need-raftIndex, snapshotCount)
}
