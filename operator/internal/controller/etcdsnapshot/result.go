package etcdsnapshot

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/snapshot"
	"github.com/cozystack/etcd-operator/operator/internal/topology"
)

// watchAgent waits for a Started snapshot's agent and records its result. A lost agent is not
// restarted: the snapshot fails, and nothing the agent may have half-written counts.
func (r *Reconciler) watchAgent(ctx context.Context, s *v1alpha2.EtcdSnapshot) (reconcile.Result, error) {
	pod, err := r.agentPod(ctx, s, v1alpha2.SnapshotAgentPodName(s.Name))
	if err != nil {
		return reconcile.Result{}, err
	}
	if pod == nil {
		return reconcile.Result{}, r.fail(ctx, s, v1alpha2.ReasonAgentLost, "the agent Pod disappeared before it reported a result")
	}
	if res, done := agentResult(pod); done {
		return reconcile.Result{}, r.record(ctx, s, res)
	}
	if _, ok := s.Annotations[v1alpha2.AnnotationSuperseded]; ok {
		return reconcile.Result{}, r.stop(ctx, s, pod, v1alpha2.ReasonSuperseded, "a newer scheduled snapshot replaced it")
	}
	if reason, stuck := topology.ContainerCannotStart(pod, v1alpha2.AgentContainer); stuck {
		return reconcile.Result{}, r.stop(ctx, s, pod, v1alpha2.ReasonSnapshotFailed, reason)
	}
	left := Deadline - time.Since(startOf(s))
	if left <= 0 {
		return reconcile.Result{}, r.stop(ctx, s, pod, v1alpha2.ReasonDeadlineExceeded, fmt.Sprintf("the agent did not finish within %s", Deadline))
	}
	return reconcile.Result{RequeueAfter: left}, nil // the Pod's watch reports its end sooner
}

// agentPod reads a Pod through the cache, and confirms around it that one the cache lacks is gone.
func (r *Reconciler) agentPod(ctx context.Context, s *v1alpha2.EtcdSnapshot, name string) (*corev1.Pod, error) {
	pod := &corev1.Pod{}
	key := client.ObjectKey{Namespace: s.Namespace, Name: name}
	err := r.Client.Get(ctx, key, pod)
	if apierrors.IsNotFound(err) && r.apiReader != nil {
		err = r.apiReader.Get(ctx, key, pod)
	}
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return pod, err
}

// agentResult is the result the agent's container left when it terminated.
func agentResult(pod *corev1.Pod) (snapshot.SnapshotResult, bool) {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name != v1alpha2.AgentContainer || cs.State.Terminated == nil {
			continue
		}
		return ParseResult(cs.State.Terminated.Message, cs.State.Terminated.ExitCode), true
	}
	return snapshot.SnapshotResult{}, false
}

// ParseResult reads an agent's termination message. A success needs the result line to say
// so; anything else (no line, a truncated one, a crash) is a failure with what was there.
func ParseResult(message string, exitCode int32) snapshot.SnapshotResult {
	var res snapshot.SnapshotResult
	if err := snapshot.DecodeTerminated(message, exitCode, &res, func() snapshot.Phase { return res.Phase }); err != nil {
		return snapshot.SnapshotResult{Phase: snapshot.PhaseFailed, Reason: snapshot.ReasonFailed, Message: err.Error()}
	}
	return res
}

// record writes the agent's result into status.
func (r *Reconciler) record(ctx context.Context, s *v1alpha2.EtcdSnapshot, res snapshot.SnapshotResult) error {
	if res.Phase != snapshot.PhaseComplete || res.URI == "" || res.Checksum == "" {
		reason := string(res.Reason)
		if reason == "" {
			reason = v1alpha2.ReasonSnapshotFailed
		}
		return r.fail(ctx, s, reason, res.Message)
	}
	patch := client.MergeFrom(s.DeepCopy())
	ApplyComplete(&s.Status, res, s.Spec.Destination.Encryption, time.Now())
	meta.SetStatusCondition(&s.Status.Conditions, readyCondition(true, v1alpha2.ReasonSnapshotStored,
		fmt.Sprintf("stored %s (%d bytes, %s) from member %s at revision %d", res.URI, res.SizeBytes, res.Checksum, res.Member, res.Revision), s.Generation))
	r.event(s, corev1.EventTypeNormal, v1alpha2.ReasonSnapshotStored, "Snapshot", "stored %s (%d bytes) from member %s, revision %d",
		res.URI, res.SizeBytes, res.Member, res.Revision)
	return r.Client.Status().Patch(ctx, s, patch)
}

// ApplyComplete fills a snapshot's status from a successful result; enc is the destination's
// encryption, whose Secret an encrypted artifact is recorded with (pure apart from now, used
// when the agent's own times are missing).
func ApplyComplete(st *v1alpha2.EtcdSnapshotStatus, res snapshot.SnapshotResult, enc *v1alpha2.SnapshotEncryption, now time.Time) {
	st.Phase = v1alpha2.SnapshotComplete
	st.Artifact = &v1alpha2.SnapshotArtifact{URI: res.URI, SizeBytes: res.SizeBytes, Checksum: res.Checksum,
		Compression: v1alpha2.SnapshotCompression(res.Compression)}
	if len(res.Recipients) > 0 && enc != nil {
		st.Artifact.Encryption = &v1alpha2.ArtifactEncryption{SecretName: enc.SecretRef.Name, Recipients: res.Recipients}
	}
	st.Member, st.MemberID, st.ClusterID = res.Member, res.MemberID, res.ClusterID
	st.Revision, st.EtcdVersion = res.Revision, res.EtcdVersion
	start, end := parseTime(res.StartTime, st.StartTime, now), parseTime(res.CompletionTime, nil, now)
	st.StartTime, st.CompletionTime = &metav1.Time{Time: start}, &metav1.Time{Time: end}
	st.Duration = &metav1.Duration{Duration: end.Sub(start).Round(time.Millisecond)}
}

func parseTime(s string, fallback *metav1.Time, now time.Time) time.Time {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t
	}
	if fallback != nil {
		return fallback.Time
	}
	return now
}

// stop deletes the agent and fails the snapshot.
func (r *Reconciler) stop(ctx context.Context, s *v1alpha2.EtcdSnapshot, pod *corev1.Pod, reason, msg string) error {
	if err := r.Client.Delete(ctx, pod); client.IgnoreNotFound(err) != nil {
		return err
	}
	return r.fail(ctx, s, reason, msg)
}

// fail makes a snapshot Failed for good, with an Event.
func (r *Reconciler) fail(ctx context.Context, s *v1alpha2.EtcdSnapshot, reason, msg string) error {
	r.event(s, corev1.EventTypeWarning, reason, "Snapshot", "snapshot failed: %s", msg)
	patch := client.MergeFrom(s.DeepCopy())
	now := metav1.Now()
	s.Status.Phase, s.Status.CompletionTime = v1alpha2.SnapshotFailed, &now
	meta.SetStatusCondition(&s.Status.Conditions, readyCondition(false, reason, msg, s.Generation))
	return r.Client.Status().Patch(ctx, s, patch)
}

func (r *Reconciler) setPhase(ctx context.Context, s *v1alpha2.EtcdSnapshot, phase v1alpha2.SnapshotPhase, reason, msg string) error {
	c := readyCondition(false, reason, msg, s.Generation)
	if s.Status.Phase == phase {
		if have := meta.FindStatusCondition(s.Status.Conditions, c.Type); have != nil && have.Reason == reason && have.Message == msg {
			return nil
		}
	}
	patch := client.MergeFrom(s.DeepCopy())
	s.Status.Phase = phase
	meta.SetStatusCondition(&s.Status.Conditions, c)
	return r.Client.Status().Patch(ctx, s, patch)
}

func readyCondition(ok bool, reason, msg string, gen int64) metav1.Condition {
	status := metav1.ConditionFalse
	if ok {
		status = metav1.ConditionTrue
	}
	return metav1.Condition{Type: v1alpha2.ConditionReady, Status: status, Reason: reason, Message: msg, ObservedGeneration: gen}
}

func startOf(s *v1alpha2.EtcdSnapshot) time.Time {
	if s.Status.StartTime != nil {
		return s.Status.StartTime.Time
	}
	return s.CreationTimestamp.Time
}
