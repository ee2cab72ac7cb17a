package etcdmember

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/snapshot"
)

// checkRestore gates a seed that must be restored from a snapshot: without the agent image the
// Pod would start etcd on an empty data dir, an empty cluster where data was asked for; it is
// never created then. A running restore that failed is reported (the Pod keeps retrying it:
// a source fixed meanwhile, such as a Secret, is picked up without recreating anything).
func (r *Reconciler) checkRestore(_ context.Context, st *memberState) (bool, error) {
	if len(st.desired.Spec.InitContainers) == 0 {
		return false, nil
	}
	if r.AgentImage == "" {
		st.waiting, st.waitingReason = "the operator runs without --agent-image, which a restore from a snapshot needs; "+
			"the Pod is not created (it would start an empty cluster)", v1alpha2.ReasonAgentImageMissing
		return true, nil
	}
	if msg, failed := restoreFailure(st.pod); failed {
		if prev, _ := r.warned.Swap(st.member.UID, msg); prev != msg {
			r.event(st.member, corev1.EventTypeWarning, v1alpha2.ReasonRestoreFailed, "Restore", "%s", msg)
		}
		st.waiting, st.waitingReason = msg, v1alpha2.ReasonRestoreFailed
	}
	return false, nil
}

// restoreFailure is the restore agent's last failure in the Pod: its result, read from the
// init container's termination message (or the end of its log).
func restoreFailure(pod *corev1.Pod) (string, bool) {
	if pod == nil {
		return "", false
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
			return "", false
		}
		return "restore from the snapshot failed: " + describeResult(t.Message, t.ExitCode), true
	}
	return "", false
}

func describeResult(message string, exitCode int32) string {
	var res snapshot.RestoreResult
	if err := json.Unmarshal([]byte(strings.TrimSpace(message)), &res); err == nil && res.Phase != "" {
		return fmt.Sprintf("%s: %s", res.Reason, res.Message)
	}
	if message = strings.TrimSpace(message); message != "" {
		return message
	}
	return fmt.Sprintf("the restore agent exited with code %d", exitCode)
}
