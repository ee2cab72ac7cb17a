package etcdcluster

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/membership"
	"github.com/cozystack/etcd-operator/operator/internal/topology"
)

// CrashLoopRestarts is how many restarts mark a member whose data the etcd process cannot start
// from, when the container is in CrashLoopBackOff now and its last run was short (see
// crashLooping). etcd refuses a wiped or corrupt data dir at once, so three quick failures in a
// row say more than any count of restarts spread over a Pod's life.
const CrashLoopRestarts = 3

// shortRun is how long a failed run may have lasted to count as a failure to start.
const shortRun = time.Minute

// nodeReadiness tells since when a node has been NotReady; ok=false means it is Ready or unknown.
type nodeReadiness func(node string) (since time.Time, notReady bool)

// brokenReason says why a member must be replaced, or "" when it need not. It is pure.
func brokenReason(m *v1alpha2.EtcdMember, pod *corev1.Pod, node nodeReadiness, grace time.Duration, now time.Time) string {
	memory := m.Spec.Storage.Medium == v1alpha2.StorageMediumMemory
	if r := meta.FindStatusCondition(m.Status.Conditions, v1alpha2.ConditionReady); r != nil && r.Reason == v1alpha2.ReasonDataLost {
		return membership.DataLostPrefix + r.Message
	}
	if !m.Spec.Dormant && topology.TmpfsDataLost(m, pod) {
		return membership.DataLostPrefix + "the tmpfs member's Pod is gone"
	}
	// Before the deletion check: Pods on a dead node get evicted and then hang in Terminating.
	if memory && pod != nil && pod.Spec.NodeName != "" && node != nil {
		if since, notReady := node(pod.Spec.NodeName); notReady && now.Sub(since) >= grace {
			return fmt.Sprintf("node %s has been NotReady since %s", pod.Spec.NodeName, since.UTC().Format(time.RFC3339))
		}
	}
	if pod == nil || !pod.DeletionTimestamp.IsZero() {
		return ""
	}
	if n, ok := crashLooping(pod); ok {
		return fmt.Sprintf("etcd has restarted %d times without becoming ready (data lost or corrupt?)", n)
	}
	return ""
}

func crashLooping(pod *corev1.Pod) (int32, bool) {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name != "etcd" || cs.Ready || cs.RestartCount < CrashLoopRestarts ||
			cs.State.Waiting == nil || cs.State.Waiting.Reason != "CrashLoopBackOff" {
			continue
		}
		last := cs.LastTerminationState.Terminated
		if last == nil || oomKilled(last) {
			return 0, false // out of memory is a sizing problem, not lost data
		}
		if !last.StartedAt.IsZero() && last.FinishedAt.Sub(last.StartedAt.Time) > shortRun {
			return 0, false // it ran for a while: not a failure to start from its data
		}
		return cs.RestartCount, true
	}
	return 0, false
}

func oomKilled(t *corev1.ContainerStateTerminated) bool { return t != nil && t.Reason == "OOMKilled" }
