package etcdcluster

import (
	"strconv"
	"strings"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/rollout"
	"github.com/cozystack/etcd-operator/operator/internal/topology"
)

// minorRecord is status.minor after this pass: set when every running member is first seen on
// one minor, with the raft index then, and whether the cluster came from an older minor. It is
// pure.
func minorRecord(prev *v1alpha2.MinorRecord, st *clusterState) *v1alpha2.MinorRecord {
	minor := commonMinor(st.members)
	index := raftIndex(st)
	if minor == "" || index == 0 || (prev != nil && prev.Version == minor) {
		return prev
	}
	return &v1alpha2.MinorRecord{Version: minor, RaftIndex: index, Upgraded: prev != nil && minorNumber(minor) > minorNumber(prev.Version)}
}

// commonMinor is the minor every running member reports, or "" when they differ or one has not
// reported.
func commonMinor(members []v1alpha2.EtcdMember) string {
	minor := ""
	for i := range members {
		m := &members[i]
		if !topology.Running(m) {
			continue
		}
		parts := strings.SplitN(m.Status.Version, ".", 3)
		if len(parts) < 2 {
			return ""
		}
		mm := parts[0] + "." + parts[1]
		if minor != "" && mm != minor {
			return ""
		}
		minor = mm
	}
	return minor
}

// minorNumber is the minor of "3.6" (6), -1 when unparseable.
func minorNumber(v string) int {
	_, minor, ok := strings.Cut(v, ".")
	n, err := strconv.Atoi(minor)
	if !ok || err != nil {
		return -1
	}
	return n
}

// raftIndex is the highest raft index a member reported this pass (0: none answered).
func raftIndex(st *clusterState) int64 {
	var max uint64
	for _, s := range st.etcd.statuses {
		if s.RaftIndex > max {
			max = s.RaftIndex
		}
	}
	return int64(max)
}

// snapshotWait is rollout.SnapshotWait for this pass, over the record as this pass sees it: a
// status not yet written must not let an upgrade through that the new record would hold.
func snapshotWait(st *clusterState) string {
	rec := minorRecord(st.status.Minor, st)
	if rec == nil {
		return ""
	}
	count := rollout.DefaultSnapshotCount(rec.Version)
	if o := st.cluster.Spec.Options; o != nil && o.SnapshotCount != nil {
		count = *o.SnapshotCount
	}
	return rollout.SnapshotWait(st.cluster.Spec.Version, rollout.Since{Minor: rec.Version, RaftIndex: rec.RaftIndex, Upgraded: rec.Upgraded},
		raftIndex(st), count)
}
