package status

import (
	"cmp"
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/cozystack/etcd-operator/operator/internal/kubectletcd"
)

// Table writes the status view for people; now dates the last backup.
func Table(w io.Writer, c Cluster, now time.Time) {
	fmt.Fprintf(w, "Cluster:\t%s/%s\n", c.Namespace, c.Name)
	fmt.Fprintf(w, "Version:\t%s\n", c.Version)
	fmt.Fprintf(w, "Cluster ID:\t%s\n", cmp.Or(c.ClusterID, "-"))
	fmt.Fprintf(w, "Available:\t%s\n", c.Available)
	fmt.Fprintf(w, "Leader:\t%s\n", cmp.Or(c.Leader, "none"))
	fmt.Fprintf(w, "Alarms:\t%s\n", cmp.Or(c.AlarmsError, alarms(c.Alarms)))
	fmt.Fprintf(w, "Last backup:\t%s\n", backup(c.LastBackup, now))
	fmt.Fprintln(w)
	fmt.Fprintln(w, "MEMBER\tID\tROLE\tVERSION\tDB SIZE\tIN USE\tRAFT INDEX\tAPPLIED\tREVISION\tHEALTHY\tERROR")
	for _, m := range c.Members {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%t\t%s\n", m.Name, cmp.Or(m.ID, "-"), m.Role, cmp.Or(m.Version, "-"),
			kubectletcd.Bytes(m.DBSize), kubectletcd.Bytes(m.DBSizeInUse), m.RaftIndex, m.AppliedIndex, m.Revision, m.Healthy, m.Error)
	}
}

func alarms(as []Alarm) string {
	if len(as) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(as))
	for _, a := range as {
		parts = append(parts, a.Type+" on "+a.Member)
	}
	return strings.Join(parts, ", ")
}

func backup(b *Backup, now time.Time) string {
	if b == nil {
		return "none"
	}
	return fmt.Sprintf("%s, %s ago, %s, %s", b.Name, duration.HumanDuration(now.Sub(b.Completed)), kubectletcd.Bytes(b.SizeBytes), cmp.Or(b.URI, "-"))
}

// MembersTable writes `kubectl etcd members` for people.
func MembersTable(w io.Writer, es []Entry) {
	fmt.Fprintln(w, "ID\tNAME\tLEARNER\tPEER URLS\tCLIENT URLS\tETCDMEMBER\tPOD\tREADY")
	for _, e := range es {
		fmt.Fprintf(w, "%s\t%s\t%t\t%s\t%s\t%s\t%s\t%t\n", cmp.Or(e.ID, "-"), cmp.Or(e.Name, "-"), e.Learner,
			cmp.Or(strings.Join(e.PeerURLs, ","), "-"), cmp.Or(strings.Join(e.ClientURLs, ","), "-"),
			cmp.Or(e.EtcdMember, "-"), cmp.Or(e.Pod, "-"), e.Ready)
	}
}
