package snapshot

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/kubectletcd"
)

// NewRestoreCmd is `kubectl etcd restore CLUSTER --snapshot NAME`.
func NewRestoreCmd(o *kubectletcd.Options) *cobra.Command {
	var from string
	var wait bool
	cmd := &cobra.Command{
		Use:   "restore CLUSTER --snapshot NAME",
		Short: "Roll the cluster back in place to one of its Complete EtcdSnapshots (creates an EtcdRestore)",
		Long: "Creates an EtcdRestore that the operator carries out: the snapshot's checksum is checked, a safety\n" +
			"snapshot is taken when the EtcdRestore asks for one, and the cluster is rebuilt from the snapshot. Every write\n" +
			"after the snapshot's revision is lost, so the plugin asks first (--yes skips the question).",
		Args:              kubectletcd.ClusterArgs(0),
		ValidArgsFunction: o.CompleteClusters,
		RunE: func(cmd *cobra.Command, args []string) error {
			if from == "" {
				return kubectletcd.Errorf(kubectletcd.ExitUsage, "--snapshot is required: the name of a Complete EtcdSnapshot of cluster %s", args[0])
			}
			r, err := Restore(cmd.Context(), o, args[0], from, wait)
			if err != nil {
				return err
			}
			return kubectletcd.Print(o.Out, o.Output, r, func(w io.Writer) {
				fmt.Fprintf(w, "etcdrestore/%s: %s\n", r.Name, phaseOf(r))
			})
		},
	}
	cmd.Flags().StringVar(&from, "snapshot", "", "the EtcdSnapshot to roll back to")
	cmd.Flags().BoolVar(&wait, "wait", true, "wait until the operator reports the restore Complete or Failed")
	return cmd
}

func phaseOf(r *v1alpha2.EtcdRestore) string {
	if r.Status.Phase == "" {
		return string(v1alpha2.RestorePending)
	}
	return string(r.Status.Phase)
}

// Restore checks the snapshot, asks, creates the EtcdRestore and (with wait) watches it to its end.
func Restore(ctx context.Context, o *kubectletcd.Options, cluster, from string, wait bool) (*v1alpha2.EtcdRestore, error) {
	c, _, ns, err := o.Client()
	if err != nil {
		return nil, err
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: cluster}, &v1alpha2.EtcdCluster{}); err != nil {
		return nil, err
	}
	s := &v1alpha2.EtcdSnapshot{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: from}, s); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, kubectletcd.Errorf(kubectletcd.ExitNotFound, "etcdsnapshot %q not found in namespace %q", from, ns)
		}
		return nil, err
	}
	if s.Spec.ClusterRef.Name != cluster || s.Status.Phase != v1alpha2.SnapshotComplete {
		return nil, kubectletcd.Errorf(kubectletcd.ExitUsage, "etcdsnapshot %s is %s and of cluster %s: a restore takes a Complete snapshot of cluster %s",
			from, phaseOrPending(s), s.Spec.ClusterRef.Name, cluster)
	}
	if err := o.Confirm(fmt.Sprintf("Roll cluster %s back to snapshot %s (revision %d)? Every write after it is lost.", cluster, from, s.Status.Revision)); err != nil {
		return nil, err
	}
	r := newRestore(ns, cluster, from)
	if err := c.Create(ctx, r); err != nil {
		return nil, err
	}
	if !wait {
		return r, nil
	}
	return waitRestore(ctx, c, r)
}

// newRestore is the EtcdRestore that rolls cluster back to the snapshot from; the API server
// names it after the cluster.
func newRestore(ns, cluster, from string) *v1alpha2.EtcdRestore {
	return &v1alpha2.EtcdRestore{ObjectMeta: metav1.ObjectMeta{GenerateName: v1alpha2.RestoreGenerateName(cluster), Namespace: ns},
		Spec: v1alpha2.EtcdRestoreSpec{ClusterRef: corev1.LocalObjectReference{Name: cluster},
			Source: v1alpha2.RestoreSource{SnapshotRef: &corev1.LocalObjectReference{Name: from}}}}
}

func phaseOrPending(s *v1alpha2.EtcdSnapshot) string {
	if s.Status.Phase == "" {
		return string(v1alpha2.SnapshotPending)
	}
	return string(s.Status.Phase)
}

// waitRestore watches the EtcdRestore until a terminal phase; a Failed one is ExitFailed.
func waitRestore(ctx context.Context, c client.WithWatch, r *v1alpha2.EtcdRestore) (*v1alpha2.EtcdRestore, error) {
	w, err := c.Watch(ctx, &v1alpha2.EtcdRestoreList{}, client.InNamespace(r.Namespace),
		client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("metadata.name", r.Name)})
	if err != nil {
		return nil, err
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		got, ok := ev.Object.(*v1alpha2.EtcdRestore)
		if !ok || ev.Type == watch.Error {
			continue
		}
		switch got.Status.Phase {
		case v1alpha2.RestoreComplete:
			return got, nil
		case v1alpha2.RestoreFailed:
			return got, kubectletcd.Errorf(kubectletcd.ExitFailed, "etcdrestore/%s failed: see kubectl describe etcdrestore %s", got.Name, got.Name)
		}
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return nil, fmt.Errorf("the watch of etcdrestore/%s ended before it finished", r.Name)
}
