package etcddefrag

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/etcd"
	"github.com/cozystack/etcd-operator/operator/internal/etcdaccess"
	"github.com/cozystack/etcd-operator/operator/internal/resources"
	"github.com/cozystack/etcd-operator/operator/internal/topology"
)

// statusTimeout bounds one member's Status call.
const statusTimeout = 5 * time.Second

// run is what an admitted pass works with.
type run struct {
	cluster *v1alpha2.EtcdCluster
	// members are the cluster's running EtcdMembers, statuses what each reported this pass.
	members  []v1alpha2.EtcdMember
	statuses map[string]etcd.EndpointStatus
	conn     etcdaccess.Conn
}

// admit lets the run go on only when its cluster exists, no older run of it is unfinished, and
// the cluster is healthy and still: every member ready and answering, nothing else changing it.
func (r *Reconciler) admit(ctx context.Context, d *v1alpha2.EtcdDefrag) (*run, waitReason, error) {
	if w, err := r.olderRun(ctx, d); err != nil || w.reason != "" {
		return nil, w, err
	}
	c := &v1alpha2.EtcdCluster{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: d.Namespace, Name: d.Spec.ClusterRef.Name}, c)
	if apierrors.IsNotFound(err) {
		return nil, waitReason{v1alpha2.ReasonClusterNotFound, fmt.Sprintf("EtcdCluster %s does not exist", d.Spec.ClusterRef.Name)}, nil
	}
	if err != nil {
		return nil, waitReason{}, err
	}
	members, err := topology.ListMembers(ctx, r.Client, c.Namespace, c.Name, c.UID)
	if err != nil {
		return nil, waitReason{}, err
	}
	members = slices.DeleteFunc(members, func(m v1alpha2.EtcdMember) bool { return !topology.Running(&m) })
	if why := busy(c, members); why != "" {
		return nil, waitReason{v1alpha2.ReasonClusterNotHealthy, why}, nil
	}
	conn, err := r.Etcd.Dial(ctx, etcdaccess.Request{Cluster: c, Members: members})
	if err != nil {
		return nil, waitReason{v1alpha2.ReasonClusterNotHealthy, "etcd cannot be reached: " + err.Error()}, nil
	}
	statuses, why := memberStatuses(ctx, conn, members)
	if why != "" {
		return nil, waitReason{v1alpha2.ReasonClusterNotHealthy, why}, nil
	}
	return &run{cluster: c, members: members, statuses: statuses, conn: conn}, waitReason{}, nil
}

// olderRun names an unfinished older run of the same cluster: runs of a cluster go one at a
// time, oldest first.
func (r *Reconciler) olderRun(ctx context.Context, d *v1alpha2.EtcdDefrag) (waitReason, error) {
	var list v1alpha2.EtcdDefragList
	if err := r.Client.List(ctx, &list, client.InNamespace(d.Namespace)); err != nil {
		return waitReason{}, err
	}
	runs := slices.DeleteFunc(list.Items, func(o v1alpha2.EtcdDefrag) bool {
		return o.Spec.ClusterRef.Name != d.Spec.ClusterRef.Name || finished(&o) || !o.DeletionTimestamp.IsZero()
	})
	slices.SortFunc(runs, olderFirst)
	if len(runs) > 0 && runs[0].Name != d.Name {
		return waitReason{v1alpha2.ReasonAnotherDefragRunning,
			fmt.Sprintf("EtcdDefrag %s of the same cluster goes first", runs[0].Name)}, nil
	}
	return waitReason{}, nil
}

// busy says why the cluster may not be defragmented now ("" when it may): a defrag stalls the
// member it runs on, so every other member must be serving and nothing else must be taking
// members away (a rollout, a membership change, a rollback, a pause).
func busy(c *v1alpha2.EtcdCluster, running []v1alpha2.EtcdMember) string {
	desired := int32(3)
	if c.Spec.Replicas != nil {
		desired = *c.Spec.Replicas
	}
	switch {
	case !c.DeletionTimestamp.IsZero():
		return "the cluster is being deleted"
	case c.Annotations[v1alpha2.AnnotationRestoring] != "":
		return "the cluster is being rolled back"
	case desired == 0:
		return "the cluster is paused (spec.replicas=0)"
	case c.Status.Rollout != nil:
		return "a rolling update runs"
	case meta.IsStatusConditionTrue(c.Status.Conditions, v1alpha2.ConditionProgressing):
		return "the cluster is changing: " + meta.FindStatusCondition(c.Status.Conditions, v1alpha2.ConditionProgressing).Message
	case int32(len(running)) != desired:
		return fmt.Sprintf("%d of %d members run", len(running), desired)
	}
	var notReady []string
	for i := range running {
		if !topology.MemberReady(&running[i]) || !topology.Registered(&running[i]) {
			notReady = append(notReady, running[i].Name)
		}
	}
	if len(notReady) > 0 {
		return "not ready: " + strings.Join(notReady, ", ")
	}
	return ""
}

// memberStatuses asks every member for its status. A member that does not answer holds the
// run; alarms (a NOSPACE the run may clear) do not.
func memberStatuses(ctx context.Context, conn etcdaccess.Conn, members []v1alpha2.EtcdMember) (map[string]etcd.EndpointStatus, string) {
	out := make(map[string]etcd.EndpointStatus, len(members))
	for i := range members {
		m := &members[i]
		cctx, cancel := context.WithTimeout(ctx, statusTimeout)
		s, err := conn.Status(cctx, resources.ClientURL(m))
		cancel()
		if err != nil {
			return nil, fmt.Sprintf("member %s does not answer: %v", m.Name, err)
		}
		out[m.Name] = s
	}
	return out, ""
}
