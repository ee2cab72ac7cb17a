package etcddefrag

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/defrag"
	"github.com/cozystack/etcd-operator/operator/internal/etcd"
	"github.com/cozystack/etcd-operator/operator/internal/resources"
)

// defaultQuota is etcd's --quota-backend-bytes when neither the member nor the spec says.
const defaultQuota = 2 << 30

// plan decides every member once, records the plan and starts the run.
func (r *Reconciler) plan(ctx context.Context, d *v1alpha2.EtcdDefrag, run *run) error {
	ms := make([]defrag.Member, 0, len(run.members))
	for _, m := range run.members {
		s := run.statuses[m.Name]
		ms = append(ms, defrag.Member{Name: m.Name, Leader: s.Leader == s.MemberID, Learner: s.IsLearner,
			DBSize: s.DBSize, DBSizeInUse: s.DBSizeInUse, Quota: quotaOf(run.cluster, s)})
	}
	now := metav1.NewTime(r.now())
	d.Status.Members = nil
	selected := 0
	for _, step := range defrag.Plan(ms, ruleOf(d.Spec.Rule)) {
		ms := v1alpha2.DefragMemberStatus{Name: step.Name, Role: step.Role(), DBSizeBefore: step.DBSize,
			Outcome: v1alpha2.DefragOutcomePending, Reason: step.Reason}
		if !step.Defragment {
			ms.Outcome, ms.FinishedAt = v1alpha2.DefragOutcomeSkipped, &now
		} else {
			selected++
		}
		d.Status.Members = append(d.Status.Members, ms)
	}
	d.Status.Phase, d.Status.StartedAt = v1alpha2.DefragRunning, &now
	msg := fmt.Sprintf("%d of %d members to defragment, one at a time, the leader last", selected, len(ms))
	r.setReady(d, metav1.ConditionFalse, v1alpha2.ReasonDefragmenting, msg)
	if err := r.Client.Status().Update(ctx, d); err != nil {
		return client.IgnoreNotFound(err)
	}
	r.event(d, corev1.EventTypeNormal, v1alpha2.ReasonDefragmenting, "%s (%s)", msg, planSummary(d))
	return nil
}

// step defragments the next member, moves leadership off it first, or finishes the run.
func (r *Reconciler) step(ctx context.Context, d *v1alpha2.EtcdDefrag, run *run) (reconcile.Result, error) {
	skipGone(d, run)
	a := defrag.Next(live(d, run))
	switch a.Kind {
	case defrag.MoveLeader:
		if err := run.conn.MoveLeader(ctx, a.Target); err != nil {
			return reconcile.Result{}, fmt.Errorf("moving leadership off %s before its defrag: %w", a.Member, err)
		}
		r.event(d, corev1.EventTypeNormal, v1alpha2.ReasonDefragmenting, "moved leadership off %s before defragmenting it", a.Member)
		return reconcile.Result{RequeueAfter: nextStep}, nil
	case defrag.Defragment:
		return reconcile.Result{RequeueAfter: nextStep}, r.defragment(ctx, d, run, a.Member)
	}
	return r.finish(ctx, d, run)
}

// skipGone records a planned member that no longer runs as skipped (written with the status
// of this step).
func skipGone(d *v1alpha2.EtcdDefrag, run *run) {
	for i := range d.Status.Members {
		ms := &d.Status.Members[i]
		if _, ok := run.statuses[ms.Name]; !ok && ms.Outcome == v1alpha2.DefragOutcomePending {
			ms.Outcome, ms.Reason = v1alpha2.DefragOutcomeSkipped, v1alpha2.ReasonMemberGone
		}
	}
}

// live is the plan's members that still run, as etcd sees them now (leadership may have moved).
func live(d *v1alpha2.EtcdDefrag, run *run) []defrag.Live {
	var out []defrag.Live
	for _, ms := range d.Status.Members {
		if s, ok := run.statuses[ms.Name]; ok {
			out = append(out, defrag.Live{Name: ms.Name, ID: s.MemberID, Leader: s.Leader == s.MemberID, Learner: s.IsLearner,
				Pending: ms.Outcome == v1alpha2.DefragOutcomePending})
		}
	}
	return out
}

// defragment runs one member's defragmentation within the member timeout and records it; a
// failure fails the run (the remaining members are not touched).
func (r *Reconciler) defragment(ctx context.Context, d *v1alpha2.EtcdDefrag, run *run, name string) error {
	m := run.member(name)
	ms := memberStatus(d, name)
	ms.DBSizeBefore = run.statuses[name].DBSize
	dctx, cancel := context.WithTimeout(ctx, memberTimeout(d))
	err := run.conn.Defragment(dctx, resources.ClientURL(m))
	cancel()
	now := metav1.NewTime(r.now())
	ms.FinishedAt = &now
	if err != nil {
		return r.fail(ctx, d, ms, err)
	}
	sctx, cancel := context.WithTimeout(ctx, statusTimeout)
	after, serr := run.conn.Status(sctx, resources.ClientURL(m))
	cancel()
	ms.Outcome, ms.Reason = v1alpha2.DefragOutcomeDefragmented, v1alpha2.ReasonDefragmented
	if serr == nil {
		ms.DBSizeAfter, ms.ReclaimedBytes = after.DBSize, max(ms.DBSizeBefore-after.DBSize, 0)
	}
	d.Status.Defragmented++
	r.setReady(d, metav1.ConditionFalse, v1alpha2.ReasonDefragmenting, fmt.Sprintf("defragmented %s; %d to go", name, pending(d)))
	if err := r.Client.Status().Update(ctx, d); err != nil {
		return client.IgnoreNotFound(err)
	}
	r.event(d, corev1.EventTypeNormal, v1alpha2.ReasonDefragmented, "defragmented %s (%s): %s → %s",
		name, ms.Role, mib(ms.DBSizeBefore), mib(ms.DBSizeAfter))
	return nil
}

// fail records a member's failed defrag and ends the run.
func (r *Reconciler) fail(ctx context.Context, d *v1alpha2.EtcdDefrag, failed *v1alpha2.DefragMemberStatus, err error) error {
	reason := v1alpha2.ReasonRPCError
	if errors.Is(err, context.DeadlineExceeded) {
		reason = v1alpha2.ReasonTimeout
	}
	failed.Outcome, failed.Reason = v1alpha2.DefragOutcomeFailed, reason
	for i := range d.Status.Members {
		if o := &d.Status.Members[i]; o.Outcome == v1alpha2.DefragOutcomePending {
			o.Outcome, o.Reason, o.FinishedAt = v1alpha2.DefragOutcomeSkipped, v1alpha2.ReasonRunFailed, failed.FinishedAt
		}
	}
	msg := fmt.Sprintf("defragmenting %s failed (%s): %v; the members after it were not touched", failed.Name, reason, err)
	d.Status.Phase, d.Status.CompletedAt = v1alpha2.DefragFailed, failed.FinishedAt
	r.setReady(d, metav1.ConditionFalse, reason, msg)
	if err := r.Client.Status().Update(ctx, d); err != nil {
		return client.IgnoreNotFound(err)
	}
	r.event(d, corev1.EventTypeWarning, reason, "%s", msg)
	return nil
}

// finish disarms the NOSPACE alarms the run cleared and completes the run.
func (r *Reconciler) finish(ctx context.Context, d *v1alpha2.EtcdDefrag, run *run) (reconcile.Result, error) {
	if err := r.disarmNoSpace(ctx, d, run); err != nil {
		return reconcile.Result{}, err
	}
	var reclaimed int64
	for _, ms := range d.Status.Members {
		reclaimed += ms.ReclaimedBytes
	}
	now := metav1.NewTime(r.now())
	d.Status.Phase, d.Status.CompletedAt = v1alpha2.DefragComplete, &now
	msg := fmt.Sprintf("%d of %d members defragmented, %s reclaimed", d.Status.Defragmented, len(d.Status.Members), mib(reclaimed))
	r.setReady(d, metav1.ConditionTrue, v1alpha2.ReasonDefragmented, msg)
	if err := r.Client.Status().Update(ctx, d); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	r.event(d, corev1.EventTypeNormal, v1alpha2.ReasonDefragmented, "%s", msg)
	return r.expire(ctx, d)
}

// disarmNoSpace clears each NOSPACE alarm whose member is now below its quota: etcd keeps
// refusing writes until the alarm is disarmed, even once the space is back.
func (r *Reconciler) disarmNoSpace(ctx context.Context, d *v1alpha2.EtcdDefrag, run *run) error {
	alarms, err := run.conn.AlarmList(ctx)
	if err != nil {
		return fmt.Errorf("listing etcd's alarms: %w", err)
	}
	for _, a := range alarms {
		if a.Type != etcd.AlarmNoSpace {
			continue
		}
		name, s, ok := run.byID(a.MemberID)
		if !ok {
			continue
		}
		if fresh, err := run.conn.Status(ctx, resources.ClientURL(run.member(name))); err == nil {
			s = fresh
		}
		if q := quotaOf(run.cluster, s); s.DBSize >= q {
			r.event(d, corev1.EventTypeWarning, v1alpha2.ReasonDefragmented,
				"member %s is still at %s of its %s quota: its NOSPACE alarm stays; compact or raise spec.options.quotaBackendBytes",
				name, mib(s.DBSize), mib(q))
			continue
		}
		if err := run.conn.AlarmDisarm(ctx, a); err != nil {
			return fmt.Errorf("disarming member %s's NOSPACE alarm: %w", name, err)
		}
		r.event(d, corev1.EventTypeNormal, v1alpha2.ReasonAlarmDisarmed, "disarmed member %s's NOSPACE alarm: %s of its %s quota in use",
			name, mib(s.DBSize), mib(quotaOf(run.cluster, s)))
	}
	return nil
}

func memberStatus(d *v1alpha2.EtcdDefrag, name string) *v1alpha2.DefragMemberStatus {
	i := slices.IndexFunc(d.Status.Members, func(m v1alpha2.DefragMemberStatus) bool { return m.Name == name })
	return &d.Status.Members[i]
}

func (run *run) member(name string) *v1alpha2.EtcdMember {
	i := slices.IndexFunc(run.members, func(m v1alpha2.EtcdMember) bool { return m.Name == name })
	return &run.members[i]
}

func (run *run) byID(id uint64) (string, etcd.EndpointStatus, bool) {
	for name, s := range run.statuses {
		if s.MemberID == id {
			return name, s, true
		}
	}
	return "", etcd.EndpointStatus{}, false
}

// quotaOf is the member's backend quota: what it reports (etcd 3.6+), else the spec's, else
// etcd's default.
func quotaOf(c *v1alpha2.EtcdCluster, s etcd.EndpointStatus) int64 {
	if s.DBQuota > 0 {
		return s.DBQuota
	}
	if o := c.Spec.Options; o != nil && o.QuotaBackendBytes != nil && *o.QuotaBackendBytes > 0 {
		return *o.QuotaBackendBytes
	}
	return defaultQuota
}

func pending(d *v1alpha2.EtcdDefrag) int {
	n := 0
	for _, ms := range d.Status.Members {
		if ms.Outcome == v1alpha2.DefragOutcomePending {
			n++
		}
	}
	return n
}

func planSummary(d *v1alpha2.EtcdDefrag) string {
	var parts []string
	for _, ms := range d.Status.Members {
		parts = append(parts, fmt.Sprintf("%s %s: %s", ms.Role, ms.Name, ms.Reason))
	}
	return fmt.Sprint(parts)
}

func mib(b int64) string { return fmt.Sprintf("%.1fMiB", float64(b)/(1<<20)) }
