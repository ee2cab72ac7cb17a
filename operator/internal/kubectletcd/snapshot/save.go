// Package snapshot is `kubectl etcd snapshot save|list` and `kubectl etcd restore`.
package snapshot

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/etcd"
	"github.com/cozystack/etcd-operator/operator/internal/kubectletcd"
	snap "github.com/cozystack/etcd-operator/operator/internal/snapshot"
)

// Saved is what `snapshot save` reports (-o json|yaml).
type Saved struct {
	Path      string `json:"path"`
	SizeBytes int64  `json:"sizeBytes"`
	Checksum  string `json:"checksum"`
	Member    string `json:"member"`
	Revision  int64  `json:"revision"`
	Version   string `json:"etcdVersion"`
}

func newSaveCmd(o *kubectletcd.Options) *cobra.Command {
	var member string
	cmd := &cobra.Command{
		Use:   "save CLUSTER FILE",
		Short: "Stream a snapshot of the cluster to FILE, verified against etcd's own hash, with its sha256",
		Long: "Streams a snapshot from one member (a follower unless --member says which) to FILE.part, checks the\n" +
			"sha256 etcd appends to it, and only then renames it to FILE. The progress bar reads the member's\n" +
			"database size. The file is etcd's snapshot format: restore it with etcdutl or an EtcdRestore.",
		Args:              kubectletcd.ClusterArgs(1),
		ValidArgsFunction: o.CompleteClusters,
		RunE: o.OnCluster(func(cmd *cobra.Command, s *kubectletcd.Session, args []string) error {
			saved, err := Save(cmd.Context(), s, member, args[0])
			if err != nil {
				return err
			}
			return kubectletcd.Print(o.Out, o.Output, saved, func(w io.Writer) {
				fmt.Fprintf(w, "saved %s: %d bytes (%s), %s, revision %d, from member %s (etcd %s)\n", saved.Path, saved.SizeBytes,
					kubectletcd.Bytes(saved.SizeBytes), saved.Checksum, saved.Revision, saved.Member, saved.Version)
			})
		}),
	}
	cmd.Flags().StringVar(&member, "member", "", "EtcdMember to stream from (default: a healthy follower, so the leader is spared)")
	return cmd
}

// Save streams the snapshot to path; nothing is left at path unless it verified.
func Save(ctx context.Context, s *kubectletcd.Session, member, path string) (Saved, error) {
	m, st, err := pickSource(ctx, s, member)
	if err != nil {
		return Saved{}, err
	}
	conn, err := s.Dial(ctx, m.Name)
	if err != nil {
		return Saved{}, err
	}
	stream, err := conn.Snapshot(ctx)
	if err != nil {
		return Saved{}, fmt.Errorf("snapshot from member %s: %w", m.Name, err)
	}
	defer stream.Close()
	part := path + ".part"
	f, err := os.OpenFile(part, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return Saved{}, err
	}
	defer os.Remove(part) // a no-op once renamed
	digest := snap.NewDigest()
	bar := progressbar.NewOptions64(st.DBSize,
		progressbar.OptionSetWriter(s.ErrOut), progressbar.OptionSetDescription("snapshot "+m.Name),
		progressbar.OptionShowBytes(true), progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true),
		progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
	_, copyErr := io.Copy(io.MultiWriter(f, digest, bar), stream)
	_ = bar.Finish()
	if err := closeSynced(f, copyErr); err != nil {
		return Saved{}, fmt.Errorf("snapshot from member %s: %w", m.Name, err)
	}
	if err := digest.Intact(); err != nil {
		return Saved{}, kubectletcd.Errorf(kubectletcd.ExitFailed, "snapshot from member %s did not verify, nothing saved: %v", m.Name, err)
	}
	if err := os.Rename(part, path); err != nil {
		return Saved{}, err
	}
	sum := digest.Sum()
	return Saved{Path: path, SizeBytes: sum.Size, Checksum: sum.Checksum, Member: m.Name, Revision: st.Revision, Version: st.Version}, nil
}

func closeSynced(f *os.File, copyErr error) error {
	if copyErr != nil {
		f.Close()
		return copyErr
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// pickSource is the named member, or the first healthy follower (the leader when alone), with
// its status.
func pickSource(ctx context.Context, s *kubectletcd.Session, name string) (*v1alpha2.EtcdMember, etcd.EndpointStatus, error) {
	conn, err := s.Dial(ctx, "")
	if err != nil {
		return nil, etcd.EndpointStatus{}, err
	}
	if name != "" {
		m, err := s.Member(name)
		if err != nil {
			return nil, etcd.EndpointStatus{}, err
		}
		st, err := kubectletcd.ProbeMember(ctx, conn, m)
		if err != nil {
			return nil, etcd.EndpointStatus{}, kubectletcd.Errorf(kubectletcd.ExitUnhealthy, "member %s does not answer: %v", name, err)
		}
		return m, st, nil
	}
	var leader *v1alpha2.EtcdMember
	var leaderStatus etcd.EndpointStatus
	for _, p := range s.Probe(ctx, conn) {
		st := p.Status
		if p.Err != nil || len(st.Errors) > 0 || st.Leader == 0 || st.IsLearner {
			continue
		}
		if st.Leader != st.MemberID {
			return &p.Member, st, nil
		}
		leader, leaderStatus = &p.Member, st
	}
	if leader == nil {
		return nil, etcd.EndpointStatus{}, kubectletcd.Errorf(kubectletcd.ExitUnhealthy, "no healthy voting member of cluster %s answers", s.Cluster.Name)
	}
	return leader, leaderStatus, nil
}
