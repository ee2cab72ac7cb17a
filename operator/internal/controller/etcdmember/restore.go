package etcdmember

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/snapshot"
)

// checkRestore gates a seed that must be restored from a snapshot: without the agent image the
// Pod would start etcd on an empty data dir, an empty cluster where data was asked for; it is
// never created then. A restore that failed is reported. One that may succeed later is left to
// the Pod's retries (a source fixed meanwhile, such as a Secret, is picked up without recreating
// anything); one that never can from this source (refusedForGood) stops: its Pod is deleted and
// not recreated for the same template, so nothing crash-loops.
func (r *Reconciler) checkRestore(ctx context.Context, st *memberState) (bool, error) {
	if !slices.ContainsFunc(st.desired.Spec.InitContainers, func(c corev1.Container) bool { return c.Name == v1alpha2.RestoreContainer }) {
		return false, nil
	}
	if r.AgentImage == "" {
		st.waiting, st.waitingReason = "the operator runs without --agent-image, which a restore from a snapshot needs; "+
			"the Pod is not created (it would start an empty cluster)", v1alpha2.ReasonAgentImageNotConfigured
		return true, nil
	}
	if refused, ok := restoreRefused(st.member); ok && refused.Revision == st.revision {
		st.waiting, st.waitingReason = refused.held(), refused.conditionReason()
		if st.pod != nil && st.pod.DeletionTimestamp.IsZero() {
			return true, r.deletePod(ctx, st.pod)
		}
		return true, nil
	}
	res, failed := restoreFailure(st.pod)
	if !failed {
		return false, nil
	}
	if !refusedForGood[res.Reason] {
		msg := "restore from the snapshot failed: " + res.cause()
		st.waiting, st.waitingReason = msg, res.conditionReason()
		if prev, _ := r.warned.Swap(st.member.UID, msg); prev != msg {
			r.restoreEvent(st, msg)
		}
		return false, nil
	}
	res.Revision = st.revision
	if err := r.refuseRestore(ctx, st.member, res); err != nil {
		return true, err
	}
	st.waiting, st.waitingReason = res.held(), res.conditionReason()
	r.restoreEvent(st, st.waiting)
	return true, r.deletePod(ctx, st.pod)
}

// restoreEvent warns on the member and on its cluster, where a user restoring looks.
func (r *Reconciler) restoreEvent(st *memberState, msg string) {
	r.event(st.member, corev1.EventTypeWarning, st.waitingReason, "Restore", "%s", msg)
	if r.Recorder != nil && st.cluster != nil {
		r.Recorder.Eventf(st.cluster, st.member, corev1.EventTypeWarning, st.waitingReason, "Restore", "seed %s: %s", st.member.Name, msg)
	}
}

// refusedForGood are the restore agent's reasons that no retry of the same Pod can change.
var refusedForGood = map[snapshot.Reason]bool{
	snapshot.ReasonChecksumMismatch: true, snapshot.ReasonSnapshotNewerThanTarget: true, snapshot.ReasonUnsupported: true,
}

// refusal is a failed restore, as AnnotationRestoreRefused records it.
type refusal struct {
	Revision string          `json:"revision,omitempty"`
	Reason   snapshot.Reason `json:"reason"`
	Message  string          `json:"message"`
}

// conditionReason is the agent's reason where the API names it, else RestoreFailed.
func (f refusal) conditionReason() string {
	if slices.Contains(v1alpha2.RestoreFailureReasons, string(f.Reason)) {
		return string(f.Reason)
	}
	return v1alpha2.ReasonRestoreFailed
}

// cause is the agent's reason and message.
func (f refusal) cause() string { return fmt.Sprintf("%s: %s", f.Reason, f.Message) }

// held says why the Pod is not recreated and what tries again.
func (f refusal) held() string {
	return "restore from the snapshot refused for good: " + f.cause() + "; the Pod is not recreated. Recreate the cluster from " +
		"another source, or change spec.version for a snapshot of a newer etcd; removing the annotation " +
		v1alpha2.AnnotationRestoreRefused + " from the member tries again"
}

func restoreRefused(m *v1alpha2.EtcdMember) (refusal, bool) {
	raw, ok := m.Annotations[v1alpha2.AnnotationRestoreRefused]
	if !ok {
		return refusal{}, false
	}
	var f refusal
	return f, json.Unmarshal([]byte(raw), &f) == nil
}

func (r *Reconciler) refuseRestore(ctx context.Context, m *v1alpha2.EtcdMember, f refusal) error {
	raw, err := json.Marshal(f)
	if err != nil {
		return err
	}
	patch := client.MergeFrom(m.DeepCopy())
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[v1alpha2.AnnotationRestoreRefused] = string(raw)
	return r.Client.Patch(ctx, m, patch)
}

// restoreFailure is the restore agent's last failure in the Pod: its result, read from the
// init container's termination message (or the end of its log).
func restoreFailure(pod *corev1.Pod) (refusal, bool) {
	if pod == nil {
		return refusal{}, false
	}
	for _, cs := range pod.Status.InitContainerStatuses {
		if cs.Name != v1alpha2.RestoreContainer {
			continue
		}
		t := cs.State.Terminated
		if t == nil {
			t = cs.LastTerminationState.Terminated
		}
		if t == nil || t.ExitCode == 0 {
			return refusal{}, false
		}
		return resultOf(t.Message, t.ExitCode), true
	}
	return refusal{}, false
}

func resultOf(message string, exitCode int32) refusal {
	var res snapshot.RestoreResult
	if err := json.Unmarshal([]byte(strings.TrimSpace(message)), &res); err == nil && res.Phase != "" {
		return refusal{Reason: res.Reason, Message: res.Message}
	}
	if message = strings.TrimSpace(message); message == "" {
		message = fmt.Sprintf("the restore agent exited with code %d", exitCode)
	}
	return refusal{Reason: snapshot.ReasonFailed, Message: message}
}
