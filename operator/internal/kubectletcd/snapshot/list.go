package snapshot

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/kubectletcd"
)

// NewCmd is `kubectl etcd snapshot save|list`.
func NewCmd(o *kubectletcd.Options) *cobra.Command {
	cmd := &cobra.Command{Use: "snapshot", Short: "Save a snapshot to a local file, or list the cluster's EtcdSnapshots"}
	cmd.AddCommand(newSaveCmd(o), newListCmd(o))
	return cmd
}

// Listed is one EtcdSnapshot of the cluster.
type Listed struct {
	Name      string     `json:"name"`
	Phase     string     `json:"phase"`
	Member    string     `json:"member,omitempty"`
	Revision  int64      `json:"revision,omitempty"`
	SizeBytes int64      `json:"sizeBytes,omitempty"`
	Checksum  string     `json:"checksum,omitempty"`
	URI       string     `json:"uri,omitempty"`
	Created   time.Time  `json:"created"`
	Completed *time.Time `json:"completed,omitempty"`
}

func newListCmd(o *kubectletcd.Options) *cobra.Command {
	return &cobra.Command{
		Use:               "list CLUSTER",
		Short:             "The cluster's EtcdSnapshots, newest first",
		Args:              kubectletcd.ClusterArgs(0),
		ValidArgsFunction: o.CompleteClusters,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, ns, err := o.Client()
			if err != nil {
				return err
			}
			if err := c.Get(cmd.Context(), client.ObjectKey{Namespace: ns, Name: args[0]}, &v1alpha2.EtcdCluster{}); err != nil {
				return err
			}
			snaps := &v1alpha2.EtcdSnapshotList{}
			if err := c.List(cmd.Context(), snaps, client.InNamespace(ns)); err != nil {
				return err
			}
			ls := List(args[0], snaps.Items)
			return kubectletcd.Print(o.Out, o.Output, ls, func(w io.Writer) { ListTable(w, ls, time.Now()) })
		},
	}
}

// List is the cluster's snapshots, newest first; it is pure.
func List(cluster string, snaps []v1alpha2.EtcdSnapshot) []Listed {
	out := []Listed{}
	for _, s := range snaps {
		if s.Spec.ClusterRef.Name != cluster {
			continue
		}
		l := Listed{Name: s.Name, Phase: cmp.Or(string(s.Status.Phase), string(v1alpha2.SnapshotPending)), Member: s.Status.Member,
			Revision: s.Status.Revision, Created: s.CreationTimestamp.UTC()}
		if a := s.Status.Artifact; a != nil {
			l.SizeBytes, l.Checksum, l.URI = a.SizeBytes, a.Checksum, a.URI
		}
		if t := s.Status.CompletionTime; t != nil {
			l.Completed = new(t.UTC())
		}
		out = append(out, l)
	}
	slices.SortStableFunc(out, func(a, b Listed) int { return cmp.Or(b.Created.Compare(a.Created), cmp.Compare(a.Name, b.Name)) })
	return out
}

// ListTable writes the list for people; now dates the ages.
func ListTable(w io.Writer, ls []Listed, now time.Time) {
	fmt.Fprintln(w, "NAME\tPHASE\tMEMBER\tREVISION\tSIZE\tCHECKSUM\tURI\tAGE")
	for _, l := range ls {
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", l.Name, l.Phase, cmp.Or(l.Member, "-"), l.Revision,
			kubectletcd.Bytes(l.SizeBytes), cmp.Or(l.Checksum, "-"), cmp.Or(l.URI, "-"), duration.HumanDuration(now.Sub(l.Created)))
	}
}
