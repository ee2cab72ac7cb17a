package etcdcluster

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/crashpoint"
	"github.com/cozystack/etcd-operator/operator/internal/membership"
	"github.com/cozystack/etcd-operator/operator/internal/resources"
	"github.com/cozystack/etcd-operator/operator/internal/rollout"
	"github.com/cozystack/etcd-operator/operator/internal/topology"
)

// syncTemplates writes the cluster's current template into every member's spec. The member
// controller then sees its Pod as outdated; rollOut decides when each one is restarted.
func (r *Reconciler) syncTemplates(ctx context.Context, st *clusterState) error {
	changed := 0
	for i := range st.members {
		m := &st.members[i]
		if !m.DeletionTimestamp.IsZero() {
			continue
		}
		want := m.Spec.DeepCopy()
		resources.ApplyTemplate(st.cluster, want, st.templateInputs())
		patch := client.MergeFrom(m.DeepCopy())
		metaChanged := resources.SyncUserMetadata(m, st.cluster.Spec.AdditionalMetadata, resources.OwnedLabels(m))
		if equality.Semantic.DeepEqual(&m.Spec, want) && !metaChanged {
			continue
		}
		specChanged := !equality.Semantic.DeepEqual(&m.Spec, want)
		m.Spec = *want
		if err := r.Client.Patch(ctx, m, patch); err != nil {
			return client.IgnoreNotFound(err)
		}
		if specChanged {
			changed++
		}
	}
	if changed > 0 {
		r.event(st.cluster, corev1.EventTypeNormal, v1alpha2.ReasonRollingUpdate, "UpdateTemplate",
			"member template changed; %d member(s) will be restarted one at a time", changed)
	}
	return nil
}

// rollOut takes the next step of a rolling update, only when membership has nothing to do: a
// membership change and a restart never overlap.
func (r *Reconciler) rollOut(ctx context.Context, st *clusterState) error {
	if st.acted || st.action.Kind != membership.None {
		return nil
	}
	if err := r.withdrawCompletedGrants(ctx, st); err != nil {
		return err
	}
	st.rollout = rollout.Decide(rolloutMembers(st))
	if st.rollout.Kind == rollout.None && st.clientTLSWait != "" {
		st.rollout = rollout.Action{Kind: rollout.Wait, Message: st.clientTLSWait}
	}
	restartDue := st.rollout.Kind == rollout.Restart || st.rollout.Kind == rollout.MoveLeader
	if restartDue && r.RolloutHold != nil {
		if msg := r.RolloutHold(); msg != "" {
			st.rollout = rollout.Action{Kind: rollout.Wait, Message: msg}
			return nil
		}
	}
	wait, downgradeReady, err := r.downgradeGate(ctx, st, restartDue)
	if err != nil {
		return err
	}
	if wait != "" { // expected progress, reported by Progressing and the downgrade's Events
		st.rollout = rollout.Action{Kind: rollout.Wait, Message: wait}
		return nil
	}
	if restartDue {
		if msg := rollout.VersionSkew(st.cluster.Spec.Version, runningVersions(st), downgradeReady); msg != "" {
			r.warnHeld(st, v1alpha2.ReasonVersionSkew, msg)
			st.rollout = rollout.Action{Kind: rollout.Wait, Message: msg}
			return nil
		}
		if msg := snapshotWait(st); msg != "" {
			r.warnHeld(st, v1alpha2.ReasonWaitingForSnapshot, msg)
			st.rollout = rollout.Action{Kind: rollout.Wait, Message: msg}
			return nil
		}
	}
	switch st.rollout.Kind {
	case rollout.Restart:
		err = r.grantRestart(ctx, st, st.memberByName(st.rollout.Member))
		var notReady certificateNotReady
		if errors.As(err, &notReady) {
			st.rollout = rollout.Action{Kind: rollout.Wait, Member: st.rollout.Member,
				Message: fmt.Sprintf("member %s is not restarted until its certificates fit it: %v", st.rollout.Member, notReady.err)}
			return nil
		}
	case rollout.MoveLeader:
		err = r.moveLeader(ctx, st, membership.Action{Target: st.rollout.Target, Message: st.rollout.Message})
		if err == nil {
			crashpoint.Hit(crashpoint.RolloutLeaderMoved)
		}
	default:
		return nil
	}
	st.acted = err == nil
	return err
}

// runningVersions are the etcd versions the cluster's members report.
func runningVersions(st *clusterState) []string {
	var out []string
	for i := range st.members {
		if v := st.members[i].Status.Version; v != "" && st.members[i].DeletionTimestamp.IsZero() {
			out = append(out, v)
		}
	}
	return out
}

// warnHeld emits a Warning the first time the rollout holds for a reason (Progressing carries
// the message from then on; a snapshot wait's count changes with every write).
func (r *Reconciler) warnHeld(st *clusterState, reason, msg string) {
	if p := meta.FindStatusCondition(st.cluster.Status.Conditions, v1alpha2.ConditionProgressing); p != nil &&
		strings.Contains(p.Message, strings.SplitN(msg, ":", 2)[0]) {
		return
	}
	r.event(st.cluster, corev1.EventTypeWarning, reason, "RollingUpdate", "rollout held: %s", msg)
}

// grantRestart lets the member controller restart the member's Pod into its update revision,
// once the TLS Secrets that revision mounts exist and fit the member: a member is never taken
// down into a Pod that cannot start (e.g. while cert-manager issues the certificate of client
// TLS just added to the cluster).
func (r *Reconciler) grantRestart(ctx context.Context, st *clusterState, m *v1alpha2.EtcdMember) error {
	if m == nil {
		return errMissing(m)
	}
	if err := r.checkCertificates(ctx, m); err != nil {
		return err
	}
	patch := client.MergeFrom(m.DeepCopy())
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[v1alpha2.AnnotationRolloutRevision] = m.Status.UpdateRevision
	if err := r.Client.Patch(ctx, m, patch); err != nil {
		return err
	}
	crashpoint.Hit(crashpoint.RestartGranted)
	r.event(st.cluster, corev1.EventTypeNormal, v1alpha2.ReasonRollingUpdate, "RestartMember", "%s", st.rollout.Message)
	return nil
}

// withdrawCompletedGrants removes the grant of a member that runs its update revision and is
// ready again: its restart is over, and the next one may be granted.
func (r *Reconciler) withdrawCompletedGrants(ctx context.Context, st *clusterState) error {
	for i := range st.members {
		m := &st.members[i]
		if _, ok := m.Annotations[v1alpha2.AnnotationRolloutRevision]; !ok || topology.MemberOutdated(m) || !topology.MemberReady(m) || !topology.StatusCurrent(m) {
			continue
		}
		patch := client.MergeFrom(m.DeepCopy())
		delete(m.Annotations, v1alpha2.AnnotationRolloutRevision)
		if err := r.Client.Patch(ctx, m, patch); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}

// rolloutMembers is the pure translation of the pass for rollout.Decide: running members only.
func rolloutMembers(st *clusterState) []rollout.Member {
	var out []rollout.Member
	for _, om := range st.obs.Members {
		m := st.memberByName(om.Name) // the EtcdMember the observation was made of
		if om.Deleting || om.Dormant {
			continue
		}
		out = append(out, rollout.Member{
			Name: m.Name, ID: om.ID, Leader: om.IsLeader, Learner: om.IsLearner || !om.InEtcd,
			Ready: om.Ready, Healthy: om.Healthy, Outdated: topology.MemberOutdated(m), Granted: topology.RestartGranted(m),
			Stale: !topology.StatusCurrent(m),
		})
	}
	return out
}

// rolloutStatus is status.rollout: nil unless some running member is outdated or restarting.
func rolloutStatus(st *clusterState) *v1alpha2.RolloutStatus {
	out := &v1alpha2.RolloutStatus{}
	busy := false
	for _, om := range st.obs.Members {
		m := st.memberByName(om.Name) // the EtcdMember the observation was made of
		if om.Deleting || om.Dormant {
			continue
		}
		out.Members++
		if !topology.MemberOutdated(m) {
			out.UpdatedMembers++
		}
		if topology.RestartGranted(m) {
			out.Restarting = m.Name
		}
		busy = busy || topology.MemberOutdated(m) || topology.RestartGranted(m)
	}
	if !busy {
		return nil
	}
	return out
}

// rollingOut: a rolling-update step was decided this pass.
func (st *clusterState) rollingOut() bool {
	return st.rollout.Kind != "" && st.rollout.Kind != rollout.None
}

// rolloutProgress is the Progressing message of a rolling update.
func rolloutProgress(st *clusterState) string {
	msg := st.rollout.Message
	if s := st.status.Rollout; s != nil {
		msg = fmt.Sprintf("%d/%d members updated; %s", s.UpdatedMembers, s.Members, msg)
	}
	if t := st.cluster.Spec.TLS; t != nil && t.Client != nil && !st.status.ClientTLSServing {
		msg = "enabling client TLS, step 1 of 2 (members serve TLS beside plaintext): " + msg
	}
	return msg
}
