package etcdsnapshot

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/resources"
	"github.com/cozystack/etcd-operator/operator/internal/snapshot"
)

// cleanupRetry is how long a failed artifact deletion waits before it is tried again.
const cleanupRetry = 30 * time.Second

// cleanUp deletes a deleted snapshot's artifact (deletionPolicy Delete), through a cleanup
// agent that removes it only if this snapshot wrote it, then lets the object go.
func (r *Reconciler) cleanUp(ctx context.Context, s *v1alpha2.EtcdSnapshot) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(s, v1alpha2.SnapshotArtifactFinalizer) {
		return reconcile.Result{}, nil
	}
	if stored(s) && r.AgentImage != "" {
		done, err := r.deleteArtifact(ctx, s)
		if err != nil || !done {
			return reconcile.Result{RequeueAfter: cleanupRetry}, err
		}
	}
	patch := client.MergeFrom(s.DeepCopy())
	controllerutil.RemoveFinalizer(s, v1alpha2.SnapshotArtifactFinalizer)
	return reconcile.Result{}, client.IgnoreNotFound(r.Client.Patch(ctx, s, patch))
}

// stored: the snapshot may have an artifact. Complete; Started (an agent stopped by the
// deletion may have completed its upload); or Failed after its agent ran: stopped (superseded,
// past the deadline) or lost after an upload may have completed, or read back wrong. A Failed
// snapshot whose agent never got to write (refused credentials, an unreachable store, a
// cluster not ready) has nothing to delete, and its store may not answer a cleanup either.
func stored(s *v1alpha2.EtcdSnapshot) bool {
	switch s.Status.Phase {
	case v1alpha2.SnapshotComplete, v1alpha2.SnapshotStarted:
		return true
	case v1alpha2.SnapshotFailed:
		c := meta.FindStatusCondition(s.Status.Conditions, v1alpha2.ConditionReady)
		return c != nil && mayHaveWritten[c.Reason]
	}
	return false
}

// mayHaveWritten are the reasons of a Failed snapshot whose agent may have left an artifact.
var mayHaveWritten = map[string]bool{
	v1alpha2.ReasonSuperseded: true, v1alpha2.ReasonDeadlineExceeded: true, v1alpha2.ReasonAgentLost: true,
	v1alpha2.ReasonChecksumMismatch: true,
}

// deleteArtifact runs the cleanup agent to completion; done once the artifact is gone.
func (r *Reconciler) deleteArtifact(ctx context.Context, s *v1alpha2.EtcdSnapshot) (bool, error) {
	if agent, err := r.agentPod(ctx, s, v1alpha2.SnapshotAgentPodName(s.Name)); err != nil {
		return false, err
	} else if agent != nil && agent.DeletionTimestamp.IsZero() && agent.Status.Phase == corev1.PodRunning {
		// A snapshot still streaming would write after the cleanup: stop it first.
		return false, client.IgnoreNotFound(r.Client.Delete(ctx, agent))
	}
	pod, err := r.agentPod(ctx, s, v1alpha2.SnapshotCleanupPodName(s.Name))
	if err != nil {
		return false, err
	}
	if pod == nil {
		c := &v1alpha2.EtcdCluster{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: s.Spec.ClusterRef.Name}, c); client.IgnoreNotFound(err) != nil {
			return false, err
		}
		return false, client.IgnoreAlreadyExists(r.Client.Create(ctx, resources.SnapshotCleanupPod(s, c, r.AgentImage)))
	}
	res, finished := cleanupResult(pod)
	if !finished {
		return false, nil
	}
	if res.Phase == snapshot.PhaseDeleted {
		r.event(s, corev1.EventTypeNormal, "ArtifactDeleted", "DeleteSnapshot", "deleted %s", artifactURI(s))
		return true, nil
	}
	r.event(s, corev1.EventTypeWarning, "ArtifactDeleteFailed", "DeleteSnapshot",
		"deleting %s failed (%s: %s); retrying in %s — remove the finalizer %s to give up and keep it",
		artifactURI(s), res.Reason, res.Message, cleanupRetry, v1alpha2.SnapshotArtifactFinalizer)
	return false, client.IgnoreNotFound(r.Client.Delete(ctx, pod))
}

func cleanupResult(pod *corev1.Pod) (snapshot.SnapshotResult, bool) {
	for _, cs := range pod.Status.ContainerStatuses {
		if t := cs.State.Terminated; cs.Name == v1alpha2.AgentContainer && t != nil {
			return ParseResult(t.Message, t.ExitCode), true
		}
	}
	return snapshot.SnapshotResult{}, false
}

func artifactURI(s *v1alpha2.EtcdSnapshot) string {
	if s.Status.Artifact != nil {
		return s.Status.Artifact.URI
	}
	return "the artifact of " + s.Name
}
