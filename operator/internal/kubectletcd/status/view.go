// Package status is `kubectl etcd status` and `kubectl etcd members`: what etcd and the
// cluster's objects say about each member, side by side.
package status

import (
	"cmp"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/etcd"
	"github.com/cozystack/etcd-operator/operator/internal/kubectletcd"
)

// Cluster is the status view (its JSON is -o json).
type Cluster struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	Version   string `json:"version"`
	ClusterID string `json:"clusterID,omitempty"`
	// Available is the Available condition's status and reason, e.g. "True (Healthy)".
	Available string   `json:"available"`
	Leader    string   `json:"leader,omitempty"`
	Members   []Member `json:"members"`
	Alarms    []Alarm  `json:"alarms"`
	// AlarmsError says why the alarms are unknown (no quorum answers the alarm list).
	AlarmsError string        `json:"alarmsError,omitempty"`
	LastBackup  *Backup       `json:"lastBackup,omitempty"`
	Unreached   []string      `json:"unreached,omitempty"`
	Took        time.Duration `json:"-"`
}

// Member is one member as etcd reports it.
type Member struct {
	Name         string `json:"name"`
	Pod          string `json:"pod,omitempty"`
	ID           string `json:"id,omitempty"`
	Role         string `json:"role"`
	Version      string `json:"version,omitempty"`
	DBSize       int64  `json:"dbSizeBytes"`
	DBSizeInUse  int64  `json:"dbSizeInUseBytes"`
	DBQuota      int64  `json:"dbQuotaBytes,omitempty"`
	RaftIndex    uint64 `json:"raftIndex"`
	AppliedIndex uint64 `json:"raftAppliedIndex"`
	Revision     int64  `json:"revision"`
	Healthy      bool   `json:"healthy"`
	Error        string `json:"error,omitempty"`
}

// Alarm is one active alarm.
type Alarm struct {
	Member string `json:"member"`
	Type   string `json:"type"`
}

// Backup is the newest Complete EtcdSnapshot of the cluster.
type Backup struct {
	Name      string    `json:"name"`
	Completed time.Time `json:"completed"`
	SizeBytes int64     `json:"sizeBytes"`
	URI       string    `json:"uri,omitempty"`
}

// Roles.
const (
	RoleLeader   = "leader"
	RoleFollower = "follower"
	RoleLearner  = "learner"
	RoleUnknown  = "unknown"
)

// Build puts the view together from the objects and the probes; it is pure.
func Build(c *v1alpha2.EtcdCluster, probes []kubectletcd.MemberStatus, alarms []etcd.Alarm, alarmsErr error, snaps []v1alpha2.EtcdSnapshot) Cluster {
	out := Cluster{Name: c.Name, Namespace: c.Namespace, Version: c.Spec.Version, ClusterID: c.Status.ClusterID,
		Available: "Unknown", Members: []Member{}, Alarms: []Alarm{}}
	if cond := meta.FindStatusCondition(c.Status.Conditions, v1alpha2.ConditionAvailable); cond != nil {
		out.Available = string(cond.Status) + " (" + cond.Reason + ")"
	}
	names := map[uint64]string{}
	for _, p := range probes {
		m := member(p)
		if p.Err == nil {
			names[p.Status.MemberID] = m.Name
			if m.Role == RoleLeader {
				out.Leader = m.Name
			}
		} else {
			out.Unreached = append(out.Unreached, m.Name)
		}
		out.Members = append(out.Members, m)
	}
	if alarmsErr != nil {
		out.AlarmsError = alarmsErr.Error()
	}
	for _, a := range alarms {
		out.Alarms = append(out.Alarms, Alarm{Member: cmp.Or(names[a.MemberID], etcd.FormatID(a.MemberID)), Type: a.Type})
	}
	out.LastBackup = newestBackup(c.Name, snaps)
	return out
}

func member(p kubectletcd.MemberStatus) Member {
	m := Member{Name: p.Member.Name, Pod: p.Member.Status.PodName, ID: p.Member.Status.MemberID, Role: RoleUnknown}
	if p.Err != nil {
		m.Error = p.Err.Error()
		return m
	}
	s := p.Status
	m.ID, m.Version, m.Revision = etcd.FormatID(s.MemberID), s.Version, s.Revision
	m.DBSize, m.DBSizeInUse, m.DBQuota = s.DBSize, s.DBSizeInUse, s.DBQuota
	m.RaftIndex, m.AppliedIndex = s.RaftIndex, s.RaftAppliedIndex
	m.Healthy = len(s.Errors) == 0 && s.Leader != 0
	switch {
	case s.IsLearner:
		m.Role = RoleLearner
	case s.Leader == s.MemberID:
		m.Role = RoleLeader
	default:
		m.Role = RoleFollower
	}
	if len(s.Errors) > 0 {
		m.Error = s.Errors[0]
	}
	return m
}

func newestBackup(cluster string, snaps []v1alpha2.EtcdSnapshot) *Backup {
	var best *v1alpha2.EtcdSnapshot
	for i := range snaps {
		s := &snaps[i]
		if s.Spec.ClusterRef.Name != cluster || s.Status.Phase != v1alpha2.SnapshotComplete || s.Status.CompletionTime == nil {
			continue
		}
		if best == nil || s.Status.CompletionTime.After(best.Status.CompletionTime.Time) {
			best = s
		}
	}
	if best == nil {
		return nil
	}
	b := &Backup{Name: best.Name, Completed: best.Status.CompletionTime.UTC()}
	if a := best.Status.Artifact; a != nil {
		b.SizeBytes, b.URI = a.SizeBytes, a.URI
	}
	return b
}

// Sorted orders members by name (the table's order).
func (c *Cluster) Sorted() {
	slices.SortFunc(c.Members, func(a, b Member) int { return cmp.Compare(a.Name, b.Name) })
}
