package etcdcluster

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/etcd"
	"github.com/cozystack/etcd-operator/operator/internal/membership"
	"github.com/cozystack/etcd-operator/operator/internal/resources"
	"github.com/cozystack/etcd-operator/operator/internal/rollout"
	"github.com/cozystack/etcd-operator/operator/internal/topology"
)

// actedRequeue is how soon a pass follows a membership change that no watch reports (etcd
// state such as a promotion or a leader move).
const actedRequeue = time.Second

// maxEtcdRetry caps the wait after etcd's by-design refusals ("unhealthy cluster" for five
// seconds after a peer connects, a learner not yet in sync): they clear on their own within
// seconds, and each second of back-off past that point is a second added to every scale step.
const maxEtcdRetry = time.Second

// degradedRecheck bounds how stale a Degraded status can get: a pass costs reads only (no API
// writes unless something changed), and a healthy cluster is never re-checked this way.
const degradedRecheck = 10 * time.Second

// authRetry is how often a cluster whose auth credentials are missing or refused is retried.
const authRetry = 10 * time.Second

// finish emits events, writes status when it changed, and picks when to look again: soon
// after a change, with back-off while waiting on etcd, never in steady state.
func (r *Reconciler) finish(ctx context.Context, st *clusterState) (reconcile.Result, error) {
	c := st.cluster
	r.warnEvenReplicas(st)
	r.reportOnce(st)
	computeStatus(st, time.Now())
	switch conflict, err := r.writeStatus(ctx, st); {
	case err != nil:
		return reconcile.Result{}, err
	case conflict:
		// The object changed since the cache's copy this pass built on: its status is not
		// written over the newer one; a pass on the newer object follows.
		log.FromContext(ctx).V(1).Info("status write conflicted; looking again")
		return reconcile.Result{RequeueAfter: staleRequeue}, nil
	}
	r.recordMetrics(st)
	switch {
	case st.err != nil && etcd.IsRetryable(st.err):
		// Routine, so debug: a learner's join and promotion meet these refusals several times
		// each, and retrying is the plan. One that lasts keeps Progressing on the step until
		// the progress deadline reports it, and counts in the EtcdRetry reconcile-error metric.
		d := min(r.retries().Next(key(c)), maxEtcdRetry)
		log.FromContext(ctx).V(1).Info("etcd asked to retry later", "after", d, "reason", st.err.Error())
		return reconcile.Result{RequeueAfter: d}, nil
	case st.err != nil:
		r.event(c, corev1.EventTypeWarning, v1alpha2.ReasonReconcileFailed, failedStep(st), "%s: %v", failedStep(st), st.err)
		return reconcile.Result{}, st.err
	case st.certManagerMissing, st.restoreWait != nil:
		// Neither cert-manager's CRD nor a snapshot becoming Complete is watched here.
		return reconcile.Result{RequeueAfter: r.retries().Next(key(c))}, nil
	case st.auth.problem != nil:
		// A missing Secret is seen by its watch only once labelled, and a refused password
		// may be fixed in etcd itself: look again on a slow, fixed beat.
		return reconcile.Result{RequeueAfter: authRetry}, nil
	case st.auth.changed:
		return reconcile.Result{RequeueAfter: actedRequeue}, nil
	case st.acted:
		r.retries().Reset(key(c))
		return reconcile.Result{RequeueAfter: actedRequeue}, nil
	case st.action.Kind == membership.Wait && st.action.Reason == membership.ReasonLearnerCatchingUp:
		return reconcile.Result{RequeueAfter: min(r.retries().Next(key(c)), maxEtcdRetry)}, nil
	case st.action.Kind == membership.Wait:
		return reconcile.Result{RequeueAfter: r.retries().Next(key(c))}, nil
	case st.rollout.Kind == rollout.Wait:
		// A restarted member catching up shows in etcd's Status only, which no watch reports.
		return reconcile.Result{RequeueAfter: min(r.retries().Next(key(c)), maxEtcdRetry)}, nil
	case unsettled(st):
		// Nothing to change, but etcd's view of a member can recover without any Kubernetes
		// event (a restarted member catching up), and a member's readiness may have moved after
		// this pass read it: look again, at most degradedRecheck apart, until all is well.
		return reconcile.Result{RequeueAfter: min(r.retries().Next(key(c)), degradedRecheck)}, nil
	}
	r.retries().Reset(key(c))
	return reconcile.Result{}, nil
}

// unsettled: the cluster should have members but not all of them are ready, or it is degraded.
func unsettled(st *clusterState) bool {
	return meta.IsStatusConditionTrue(st.status.Conditions, v1alpha2.ConditionDegraded) ||
		(len(st.members) > 0 && st.status.ReadyMembers < int32(len(st.members)) && !allDormant(st.members))
}

func allDormant(members []v1alpha2.EtcdMember) bool {
	for i := range members {
		if !members[i].Spec.Dormant {
			return false
		}
	}
	return true
}

// reportOnce emits the Events of problems this step reports once per occurrence, and
// forgets the ones that are gone.
func (r *Reconciler) reportOnce(st *clusterState) {
	c := st.cluster
	if st.action.Kind != membership.AllMembersLost {
		st.memo.resolved(topicAllLost)
	} else if st.memo.due(c, topicAllLost, v1alpha2.ReasonAllMembersLost) {
		r.event(c, corev1.EventTypeWarning, v1alpha2.ReasonAllMembersLost, "Heal", "%s", st.action.Message)
	}
	if st.auth.problem == nil {
		st.memo.resolved(topicAuth)
	}
}

// warnEvenReplicas warns once per generation (before the operator restarts: once per
// generation not yet in status).
func (r *Reconciler) warnEvenReplicas(st *clusterState) {
	c, last := st.cluster, st.memo.warnedGen
	if last == 0 {
		last = c.Status.ObservedGeneration
	}
	st.memo.warnedGen = c.Generation
	if last == c.Generation {
		return
	}
	n := resources.DesiredReplicas(c)
	if n > 0 && n%2 == 0 {
		r.event(c, corev1.EventTypeWarning, "EvenReplicas", "Validate",
			"replicas=%d tolerates %d failed member(s), the same as %d members; an odd count is recommended", n, (n-1)/2, n-1)
	}
}

// writeStatus writes the pass's status unless the cached one (no older than our last write,
// see cacheBehind) already says it. The patch carries the cached resourceVersion: a merge
// patch leaves out what equals its base, so over a newer object it would mix two passes'
// statuses. conflict: the object changed meanwhile, and nothing was written.
func (r *Reconciler) writeStatus(ctx context.Context, st *clusterState) (conflict bool, err error) {
	c := st.cluster
	if equality.Semantic.DeepEqual(&c.Status, st.status) {
		return false, nil
	}
	patch := client.MergeFromWithOptions(c.DeepCopy(), client.MergeFromWithOptimisticLock{})
	c.Status = *st.status
	switch err := r.Client.Status().Patch(ctx, c, patch); {
	case apierrors.IsConflict(err):
		return true, nil
	case err != nil:
		return false, client.IgnoreNotFound(err)
	}
	st.memo.wroteStatus(c.ResourceVersion, time.Now())
	return false, nil
}

// computeStatus fills st.status from the pass; it is pure apart from the clock it is given.
func computeStatus(st *clusterState, now time.Time) {
	s, c := st.status, st.cluster
	s.Selector = resources.SelectorString(c.Name)
	if !st.decided && meta.FindStatusCondition(s.Conditions, v1alpha2.ConditionAvailable) != nil {
		keepObserved(st, now)
		return
	}
	trackDeadline(st, now)
	s.ObservedGeneration = c.Generation
	s.ReadyMembers, s.BrokenMembers = 0, 0
	for i := range st.members {
		m := &st.members[i]
		if topology.Running(m) && topology.MemberReady(m) {
			s.ReadyMembers++
		}
	}
	for _, m := range st.obs.Members {
		if m.Broken != "" && !m.Deleting {
			s.BrokenMembers++
		}
	}
	s.Members = clusterMemberStatuses(st)
	s.Minor = minorRecord(s.Minor, st)
	s.Rollout = rolloutStatus(st)
	if st.etcd.list != nil {
		s.LeaderID = ""
		if st.etcd.leader != 0 {
			s.LeaderID = etcd.FormatID(st.etcd.leader)
		}
	}
	for _, cond := range conditions(st, now) {
		cond.ObservedGeneration = c.Generation
		meta.SetStatusCondition(&s.Conditions, cond)
	}
}

// keepObserved is the status of a pass that stopped before decide (an API error in an earlier
// step, say): it observed neither members nor health, so what the stored status says of them
// stands — members, counts, leader, Available and Degraded, restamped for this generation as
// the operator's latest knowledge — and the pass reports its own failure on Progressing.
// Computed from the empty observation instead, it read "paused, never bootstrapped" with no
// members, and an empty status.members lets the CRD's version rule admit a minor skip.
func keepObserved(st *clusterState, now time.Time) {
	s, c := st.status, st.cluster
	armDeadline(st, now) // a pass that could not finish is not settled
	s.ObservedGeneration = c.Generation
	for i := range s.Conditions {
		s.Conditions[i].ObservedGeneration = c.Generation
	}
	if st.err != nil && !etcd.IsRetryable(st.err) {
		p := progressing(st)
		p.ObservedGeneration = c.Generation
		meta.SetStatusCondition(&s.Conditions, p)
	}
}

// clusterMemberStatuses is status.members: every member that is not leaving, by name.
func clusterMemberStatuses(st *clusterState) []v1alpha2.ClusterMemberStatus {
	var out []v1alpha2.ClusterMemberStatus
	for _, om := range st.obs.Members {
		m := st.memberByName(om.Name) // the EtcdMember the observation was made of
		if om.Deleting {
			continue
		}
		ms := v1alpha2.ClusterMemberStatus{Name: m.Name, ID: m.Status.MemberID, Version: m.Status.Version, Ready: topology.MemberReady(m)}
		switch {
		case !om.InEtcd:
		case om.IsLearner:
			ms.Role = v1alpha2.MemberRoleLearner
		case om.IsLeader:
			ms.Role = v1alpha2.MemberRoleLeader
		default:
			ms.Role = v1alpha2.MemberRoleFollower
		}
		if om.ID != 0 {
			ms.ID = etcd.FormatID(om.ID)
		}
		out = append(out, ms)
	}
	slices.SortFunc(out, func(a, b v1alpha2.ClusterMemberStatus) int { return strings.Compare(a.Name, b.Name) })
	return out[:min(len(out), v1alpha2.MaxStatusMembers)] // the schema's bound; far beyond any sane cluster
}

// conditions returns Available, Progressing and Degraded for the pass.
func conditions(st *clusterState, now time.Time) []metav1.Condition {
	avail, degraded := health(st)
	prog := progressing(st)
	if d := st.status.ProgressDeadline; prog.Status == metav1.ConditionTrue && d != nil && now.After(d.Time) {
		prog = cond(v1alpha2.ConditionProgressing, false, v1alpha2.ReasonDeadlineExceeded,
			"no progress since %s (still trying): %s", d.UTC().Format(time.RFC3339), prog.Message)
	}
	if d, ok := startDegraded(st); ok {
		degraded = d
	}
	if st.restoreWait != nil {
		degraded = *st.restoreWait
	}
	if p := st.auth.problem; p != nil {
		degraded = *p
		if !st.obs.Reachable && (st.obs.Formed || p.Reason == v1alpha2.ReasonAuthRequiredNotConfigured) {
			avail = cond(v1alpha2.ConditionAvailable, false, p.Reason, "%s", p.Message)
		}
	}
	return []metav1.Condition{avail, prog, degraded}
}

// startDegraded surfaces what keeps members from starting: cert-manager missing, a member whose
// certificate does not fit it or whose image cannot be pulled, or a seed whose restore failed (the
// member controller names the problem).
func startDegraded(st *clusterState) (metav1.Condition, bool) {
	const dg = v1alpha2.ConditionDegraded
	if st.certManagerMissing {
		return cond(dg, true, v1alpha2.ReasonCertManagerNotInstalled,
			"spec.tls asks for cert-manager Certificates, but the %s CRD is not installed", certificateCRD), true
	}
	for i := range st.members {
		m := &st.members[i]
		if !m.DeletionTimestamp.IsZero() {
			continue
		}
		if r := meta.FindStatusCondition(m.Status.Conditions, v1alpha2.ConditionReady); r != nil &&
			(r.Reason == v1alpha2.ReasonCertificateInvalid || r.Reason == v1alpha2.ReasonImagePullFailed ||
				slices.Contains(v1alpha2.RestoreFailureReasons, r.Reason)) {
			return cond(dg, true, r.Reason, "member %s not started: %s", m.Name, r.Message), true
		}
	}
	return metav1.Condition{}, false
}

// trackDeadline starts spec.progressDeadlineSeconds when a change begins (or the spec changes)
// and clears it once the cluster is where it should be. Unlike the public operator, an expired
// deadline is reported, not terminal: the operator keeps working toward the target.
func trackDeadline(st *clusterState, now time.Time) {
	s := st.status
	settled := (st.action.Kind == membership.None && !st.rollingOut()) || st.action.Kind == membership.AllMembersLost
	if settled {
		s.ProgressDeadline = nil
		return
	}
	armDeadline(st, now)
}

// armDeadline starts the progress deadline unless one runs for this generation already.
func armDeadline(st *clusterState, now time.Time) {
	s, c := st.status, st.cluster
	if s.ProgressDeadline == nil || s.ObservedGeneration != c.Generation {
		secs := int32(v1alpha2.DefaultProgressDeadlineSeconds)
		if c.Spec.ProgressDeadlineSeconds != nil {
			secs = *c.Spec.ProgressDeadlineSeconds
		}
		s.ProgressDeadline = &metav1.Time{Time: now.Add(time.Duration(secs) * time.Second).Truncate(time.Second)}
	}
}

func cond(t string, ok bool, reason, format string, args ...any) metav1.Condition {
	s := metav1.ConditionFalse
	if ok {
		s = metav1.ConditionTrue
	}
	return metav1.Condition{Type: t, Status: s, Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// health is Available and Degraded, which read the same facts.
func health(st *clusterState) (metav1.Condition, metav1.Condition) {
	const av, dg = v1alpha2.ConditionAvailable, v1alpha2.ConditionDegraded
	o := st.obs
	switch {
	case st.action.Kind == membership.AllMembersLost:
		return cond(av, false, v1alpha2.ReasonAllMembersLost, "%s", st.action.Message),
			cond(dg, true, v1alpha2.ReasonAllMembersLost, "%s", st.action.Message)
	case st.action.Reason == membership.ReasonQuorumLostForGood || st.action.Reason == "QuorumRecovering":
		return cond(av, false, v1alpha2.ReasonQuorumLostForGood, "%s", st.action.Message),
			cond(dg, true, v1alpha2.ReasonQuorumLostForGood, "%s", st.action.Message)
	case o.Desired == 0 && !o.Formed:
		return cond(av, false, v1alpha2.ReasonPaused, "replicas is 0; the cluster was never bootstrapped, no data written"),
			cond(dg, false, v1alpha2.ReasonPaused, "paused")
	case o.Desired == 0 && len(membership.Running(o.Members)) == 0:
		return cond(av, false, v1alpha2.ReasonPaused, "paused; data kept in %s", pausedPVCs(st)),
			cond(dg, false, v1alpha2.ReasonPaused, "paused")
	case !o.Formed:
		return cond(av, false, v1alpha2.ReasonBootstrapping, "waiting for the seed member to form the cluster"),
			cond(dg, false, v1alpha2.ReasonBootstrapping, "bootstrapping")
	case !o.Reachable:
		return cond(av, false, v1alpha2.ReasonClusterUnreachable, "etcd's member list cannot be read"),
			cond(dg, true, v1alpha2.ReasonClusterUnreachable, "etcd's member list cannot be read")
	}
	voters, ready, unhealthy := 0, 0, []string(nil)
	for _, m := range membership.Running(o.Members) {
		if m.InEtcd && !m.IsLearner {
			voters++
			if m.Ready && m.Healthy {
				ready++
			}
		}
		if m.Broken != "" || (!m.Pending && !m.IsLearner && !(m.Ready && m.Healthy)) {
			unhealthy = append(unhealthy, m.Name)
		}
	}
	switch {
	case voters > 0 && ready == voters && len(unhealthy) == 0:
		return cond(av, true, v1alpha2.ReasonQuorumHealthy, "%d of %d voters ready", ready, voters),
			cond(dg, false, v1alpha2.ReasonQuorumHealthy, "all members healthy")
	case ready >= membership.Quorum(voters):
		return cond(av, true, v1alpha2.ReasonQuorumAvailable, "%d of %d voters ready", ready, voters),
			cond(dg, true, v1alpha2.ReasonMembersUnhealthy, "unhealthy: %s", strings.Join(unhealthy, ", "))
	}
	return cond(av, false, v1alpha2.ReasonQuorumLost, "%d of %d voters ready", ready, voters),
		cond(dg, true, v1alpha2.ReasonQuorumLost, "unhealthy: %s", strings.Join(unhealthy, ", "))
}

// failedStep names what failed: the membership action, or the pass itself when the error came
// from another step (an Event's action must not be empty, or the API server rejects it).
func failedStep(st *clusterState) string {
	return cmp.Or(string(st.action.Kind), "Reconcile")
}

func progressing(st *clusterState) metav1.Condition {
	const pr = v1alpha2.ConditionProgressing
	a := st.action
	if st.err != nil && !etcd.IsRetryable(st.err) {
		return cond(pr, true, v1alpha2.ReasonActionFailed, "%s failed: %v", failedStep(st), st.err)
	}
	switch a.Kind {
	case membership.None:
		if st.rollingOut() {
			return cond(pr, true, v1alpha2.ReasonRollingUpdate, "%s", rolloutProgress(st))
		}
		if a.Reason == v1alpha2.ReasonPaused {
			return cond(pr, false, v1alpha2.ReasonPaused, "paused")
		}
		return cond(pr, false, v1alpha2.ReasonReconciled, "%d members as desired", st.obs.Desired)
	case membership.AllMembersLost:
		return cond(pr, false, v1alpha2.ReasonAllMembersLost, "%s", a.Message)
	case membership.Bootstrap:
		return cond(pr, true, v1alpha2.ReasonBootstrapping, "bootstrapping the seed member")
	case membership.AddMember, membership.CompletePending, membership.Promote, membership.Wake:
		return cond(pr, true, v1alpha2.ReasonScalingUp, "%s %s", a.Kind, a.Member)
	case membership.RemoveMember, membership.Park, membership.MoveLeader:
		return cond(pr, true, v1alpha2.ReasonScalingDown, "%s %s", a.Kind, a.Member)
	case membership.ReplaceMember, membership.RemoveStray:
		return cond(pr, true, v1alpha2.ReasonReplacing, "%s", a.Message)
	}
	return cond(pr, true, a.Reason, "%s", a.Message)
}

func pausedPVCs(st *clusterState) string {
	var names []string
	for i := range st.members {
		if st.members[i].Spec.Dormant {
			names = append(names, "PVC "+v1alpha2.PVCName(st.members[i].Name))
		}
	}
	return strings.Join(names, ", ")
}
