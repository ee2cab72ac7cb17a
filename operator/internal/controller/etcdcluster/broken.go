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

// nodeStates tells what is known of a node (topology.StateOf).
type nodeStates func(node string) topology.NodeState

// graces are how long a member's node may stay NotReady before the member is replaced: a tmpfs
// member's data cannot outlive its node; a PVC member's may, so it waits longer.
type graces struct{ tmpfs, pvc time.Duration }

// brokenReason says why a member must be replaced, or "" when it need not. It is pure but for
// volumeFollows (the member's PV can be used off its node), asked only for a PVC member whose
// node is out of service.
func brokenReason(m *v1alpha2.EtcdMember, pod *corev1.Pod, node nodeStates, g graces, volumeFollows func(node string) bool, now time.Time) string {
	memory := m.Spec.Storage.Medium == v1alpha2.StorageMediumMemory
	if r := meta.FindStatusCondition(m.Status.Conditions, v1alpha2.ConditionReady); r != nil && r.Reason == v1alpha2.ReasonDataLost {
		return membership.DataLostPrefix + r.Message
	}
	var bootID string
	if pod != nil && node != nil {
		bootID = node(pod.Spec.NodeName).BootID
	}
	if !m.Spec.Dormant && topology.TmpfsDataLost(m, pod, bootID) {
		if topology.NodeRebooted(m, bootID) {
			return membership.DataLostPrefix + "the tmpfs member's node booted again (new boot ID): its memory volume is empty"
		}
		if topology.DataGuardRefused(pod) {
			return membership.DataLostPrefix + "the tmpfs member's Pod restarted on an empty memory volume (its data guard keeps etcd from starting)"
		}
		return membership.DataLostPrefix + "the tmpfs member's Pod is gone"
	}
	// Before the deletion check: Pods on a dead node get evicted and then hang in Terminating.
	if r := nodeLost(memory, pod, node, g, volumeFollows, now); r != "" {
		return r
	}
	if pod == nil || !pod.DeletionTimestamp.IsZero() {
		return ""
	}
	if n, ok := crashLooping(pod); ok {
		return fmt.Sprintf("etcd has restarted %d times without becoming ready (data lost or corrupt?)", n)
	}
	return ""
}

// nodeLost: the member's node has been NotReady past the grace period of its storage. A PVC
// member is then replaced too (removing it from etcd first fences its old process, should the
// node come back), except when its node is marked out of service and its volume can follow:
// the member controller clears its Pod, and it restarts elsewhere on the same data.
func nodeLost(memory bool, pod *corev1.Pod, node nodeStates, g graces, volumeFollows func(node string) bool, now time.Time) string {
	if pod == nil || pod.Spec.NodeName == "" || node == nil {
		return ""
	}
	s := node(pod.Spec.NodeName)
	grace := g.pvc
	if memory {
		grace = g.tmpfs
	}
	if !s.NotReady || now.Sub(s.NotReadySince) < grace {
		return ""
	}
	why := fmt.Sprintf("node %s has been NotReady since %s", pod.Spec.NodeName, s.NotReadySince.UTC().Format(time.RFC3339))
	switch {
	case memory:
		return why
	case !s.OutOfService:
		return why + " (past the " + g.pvc.String() + " grace for members with a PVC, and not marked " + corev1.TaintNodeOutOfService + ")"
	case !volumeFollows(pod.Spec.NodeName):
		return why + " and its volume is bound to that node"
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
