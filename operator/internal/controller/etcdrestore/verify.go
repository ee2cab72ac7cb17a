package etcdrestore

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/resources"
	"github.com/cozystack/etcd-operator/operator/internal/snapshot"
	"github.com/cozystack/etcd-operator/operator/internal/topology"
)

// sourceVerified reads the source through in a verify Pod (checksum and etcd's trailer) before
// anything of the cluster is touched: once the members are gone, a source that does not
// restore leaves the cluster with nothing. It reports true once the Pod has said so; a source
// that fails the check fails the rollback, the cluster untouched.
func (r *Reconciler) sourceVerified(ctx context.Context, er *v1alpha2.EtcdRestore, c *v1alpha2.EtcdCluster, mr *v1alpha2.MemberRestore) (bool, error) {
	pod := &corev1.Pod{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: er.Namespace, Name: v1alpha2.RestoreVerifyPodName(er.Name)}, pod)
	switch {
	case apierrors.IsNotFound(err):
		return false, r.startVerify(ctx, er, c, mr)
	case err != nil:
		return false, err
	}
	res, done := verifyResult(pod)
	switch {
	case !done:
		return false, nil // the Pod's watch wakes us
	case res.Phase == snapshot.PhaseVerified:
		return true, nil
	}
	reason := string(res.Reason)
	if reason == "" {
		reason = v1alpha2.ReasonSnapshotFailed
	}
	return false, r.fail(ctx, er, reason, "%s failed its check before the rollback: %s; the cluster was not touched", sourceName(er), res.Message)
}

func (r *Reconciler) startVerify(ctx context.Context, er *v1alpha2.EtcdRestore, c *v1alpha2.EtcdCluster, mr *v1alpha2.MemberRestore) error {
	if r.AgentImage == "" {
		return r.fail(ctx, er, v1alpha2.ReasonAgentImageNotConfigured,
			"the operator runs without --agent-image: it can neither check nor restore the source; the cluster was not touched")
	}
	if err := r.Client.Create(ctx, resources.RestoreVerifyPod(er, c, mr, r.AgentImage)); client.IgnoreAlreadyExists(err) != nil {
		return err
	}
	r.event(er, corev1.EventTypeNormal, v1alpha2.ReasonVerifyingSource, "Verify", "reading %s through to check it before %s is touched", sourceName(er), c.Name)
	return r.setPhase(ctx, er, v1alpha2.RestorePending, v1alpha2.ReasonVerifyingSource, fmt.Sprintf("reading %s through to check it", sourceName(er)))
}

// verifyResult is the verify Pod's result once it has one: its agent's result line, or a
// failure saying why there is none (a crash, a container that can never start).
func verifyResult(pod *corev1.Pod) (snapshot.RestoreResult, bool) {
	if why, stuck := topology.ContainerCannotStart(pod, v1alpha2.AgentContainer); stuck {
		return snapshot.RestoreResult{Phase: snapshot.PhaseFailed, Message: why}, true
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if t := cs.State.Terminated; cs.Name == v1alpha2.AgentContainer && t != nil {
			var res snapshot.RestoreResult
			if err := snapshot.DecodeTerminated(t.Message, t.ExitCode, &res, func() snapshot.Phase { return res.Phase }); err != nil {
				return snapshot.RestoreResult{Phase: snapshot.PhaseFailed, Message: err.Error()}, true
			}
			return res, true
		}
	}
	if pod.Status.Phase == corev1.PodFailed {
		return snapshot.RestoreResult{Phase: snapshot.PhaseFailed, Message: "the verify Pod failed: " + pod.Status.Message}, true
	}
	return snapshot.RestoreResult{}, false
}
