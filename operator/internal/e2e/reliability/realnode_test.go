//go:build e2e

package reliability

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/e2e/localcluster"
	"github.com/cozystack/etcd-operator/internal/ociimage"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
)

// realNodes is how many real nodes (kubelet + containerd running the images of `make images`)
// the package's cluster has beside its node agents. They are tainted, so only the real-node
// campaign's members, which tolerate the taint and select the nodes, run there.
const realNodes = 3

// realNodeTaint keeps every other campaign's members on the node agents.
var realNodeTaint = corev1.Taint{Key: localcluster.RealNodeKindLabel, Value: localcluster.RealNodeKind, Effect: corev1.TaintEffectNoSchedule}

var taintOnce sync.Once

// taintRealNodes puts realNodeTaint on the cluster's real nodes, once, before any campaign
// creates a cluster (the kubelet keeps a taint set through the API when it registers again).
func taintRealNodes(t *testing.T, c *framework.Cluster) {
	t.Helper()
	taintOnce.Do(func() {
		for _, i := range c.RealNodes() {
			name := localcluster.NodeName(c.Name, i)
			e2eutil.WaitNoError(t, time.Minute, "tainting real node "+name, func() error {
				n, err := c.Kube.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				if slices.ContainsFunc(n.Spec.Taints, func(x corev1.Taint) bool { return x.MatchTaint(&realNodeTaint) }) {
					return nil
				}
				n.Spec.Taints = append(n.Spec.Taints, realNodeTaint)
				_, err = c.Kube.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{})
				return err
			})
		}
	})
}

// onRealNodes places a cluster's members on the real nodes.
func onRealNodes(s *v1alpha2.EtcdClusterSpec) {
	s.NodeSelector = map[string]string{localcluster.RealNodeKindLabel: localcluster.RealNodeKind}
	s.Tolerations = append(s.Tolerations, corev1.Toleration{Key: realNodeTaint.Key, Operator: corev1.TolerationOpEqual,
		Value: realNodeTaint.Value, Effect: realNodeTaint.Effect})
}

// builtOperatorImage is the operator image `make images` built and the real nodes imported
// (the operator chart's default): a tmpfs member's data guard runs it.
func builtOperatorImage(t *testing.T) string {
	t.Helper()
	root, err := localcluster.FindModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	ref, err := ociimage.OperatorImage(filepath.Join(root, "charts", "etcd-operator"))
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

// realFault is a fault of the real-node campaign.
type realFault int

const (
	runtimeKillLeader realFault = iota
	kubeletStopped
	followerNodeStopped
	followerVolumeFull
	leaderPartitioned
	realFaultKinds // how many there are
)

func (k realFault) String() string {
	return [...]string{"the leader's etcd container killed by the runtime", "the leader's kubelet stopped until its Node is NotReady, then started",
		"a follower's node stopped for 5–15 s (containers, containerd, mounts) and started", "a follower's tmpfs volume full for 2–6 s",
		"the leader cut off the network for 2–6 s"}[k]
}

// TestRealNodesAtRest: the at-rest campaign on real nodes: a 3-member tmpfs cluster (a tmpfs
// is the volume the full-volume fault fills) on three real nodes under the recording
// workload, one fault of each real-node kind in turn (realFault; $RELIABILITY_FAULTS sets how
// many). The histories must be linearizable and the cluster must converge back to 3 voters
// after each. A stopped node loses its tmpfs: the operator replaces that member.
func TestRealNodesAtRest(t *testing.T) {
	cp := newCampaign(t, "at rest on real nodes", "real", int(realFaultKinds), "--agent-image="+builtOperatorImage(t))
	cp.whileFull = cp.fullAsEtcdSeesIt
	e2eutil.CreateCluster(t, cp.c, cp.ns, "real", 3, e2eutil.Tmpfs, onRealNodes)
	e2eutil.WaitConverged(t, cp.c, cp.ns, "real", 3, convergeTimeout)
	cp.onRealNodesOnly()
	cp.watch(e2eutil.EtcdClient(t, cp.c, cp.ns, "real"))
	for i := range cp.faults {
		if i > 0 {
			cp.nextRound()
		}
		k := realFault(i % int(realFaultKinds))
		start := time.Now()
		over, report := cp.injectReal(k)
		cp.converge(start, fmt.Sprintf("converged after fault %d (%s)", i+1, k), convergeTimeout, over, cp.converged(3))
		report()
		cp.onRealNodesOnly()
	}
	cp.finish()
}

// injectReal does fault k on the real nodes; it returns the condition of its being over and
// what to log once the cluster converged.
func (cp *campaign) injectReal(k realFault) (over func() bool, report func()) {
	cp.t.Helper()
	done, none := func() bool { return true }, func() {}
	switch k {
	case runtimeKillLeader:
		return cp.inject(killLeader), none // KillContainer asks a real node's containerd
	case kubeletStopped:
		cp.onVictim(func() string { return cp.pick(true) }, cp.stopKubeletOf)
		return done, none
	case followerNodeStopped:
		return cp.stopFollowerNode(), none
	case followerVolumeFull:
		victim, before := cp.fillVolume()
		return done, func() {
			cp.reportVolumeVictim(victim, before)
			cp.sawENOSPC(victim, before)
		}
	default:
		return cp.inject(partitionLeader), none
	}
}

// stopFollowerNode stops a follower's node and starts it again. It is over once the follower's
// Pod reports an etcd started after the stop, or the member is replaced: until its kubelet posts
// the Pod's status again, the API still shows the Pod Ready as it was before the stop (a stop
// shorter than the node monitor's grace period leaves the Node and its Pods as they were), and
// the cluster would look converged with that member down.
func (cp *campaign) stopFollowerNode() (over func() bool) {
	cp.t.Helper()
	cp.row.Faults++
	var victim string
	var stopped time.Time
	cp.onVictim(cp.pickNode, func(name string) error {
		victim, stopped = name, time.Now().Truncate(time.Second) // a container's start time has seconds only
		p := e2eutil.Pod(cp.t, cp.c, cp.ns, name)
		bootBefore := cp.bootID(p)
		if err := cp.restartNodeOf(name); err != nil {
			return err
		}
		// A new boot ID, as a rebooted machine's (the operator reads it), once the kubelet posts
		// its first status: StartNode's wait for Ready does not wait for that, since a stop
		// shorter than the node monitor's grace period leaves the Node Ready all along.
		took := e2eutil.WaitFor(cp.t, time.Minute, "a new boot ID of node "+p.Spec.NodeName, func() bool { return cp.bootID(p) != bootBefore })
		cp.t.Logf("node %s reports a new boot ID %s after StartNode returned", p.Spec.NodeName, took.Round(100*time.Millisecond))
		return nil
	})
	return func() bool {
		p := e2eutil.Pod(cp.t, cp.c, cp.ns, victim)
		if p == nil || !slices.ContainsFunc(e2eutil.Members(cp.t, cp.c, cp.ns, cp.cluster), func(m v1alpha2.EtcdMember) bool { return m.Name == victim }) {
			return true // replaced
		}
		for _, s := range p.Status.ContainerStatuses {
			if s.Name == "etcd" && s.State.Running != nil && !s.State.Running.StartedAt.Time.Before(stopped) {
				return true
			}
		}
		return false
	}
}

// bootID is the status.nodeInfo.bootID of p's node ("" for no Pod or node).
func (cp *campaign) bootID(p *corev1.Pod) string {
	if p == nil || p.Spec.NodeName == "" {
		return ""
	}
	n, err := cp.c.Kube.CoreV1().Nodes().Get(context.Background(), p.Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		cp.t.Fatal(err)
	}
	return n.Status.NodeInfo.BootID
}

// stopKubeletOf stops the kubelet of victim's node (its containers keep running), waits until
// the node lifecycle controller marks the Node NotReady, and starts the kubelet again.
func (cp *campaign) stopKubeletOf(victim string) error {
	cp.t.Helper()
	p := e2eutil.Pod(cp.t, cp.c, cp.ns, victim)
	if p == nil || p.Spec.NodeName == "" {
		return apierrors.NewNotFound(corev1.Resource("pods"), victim)
	}
	node, err := cp.c.NodeIndex(p.Spec.NodeName)
	if err != nil {
		cp.t.Fatal(err)
	}
	cp.row.Faults++
	if err := cp.c.StopKubelet(node); err != nil {
		cp.t.Fatal(err)
	}
	cp.t.Cleanup(func() { _ = cp.c.StartNode(node) }) // the kubelet back whatever fails first
	cp.t.Logf("fault %d: the kubelet of node %d (leader %s) stopped", cp.row.Faults, node, victim)
	start := time.Now()
	e2eutil.WaitFor(cp.t, 2*time.Minute, "node "+p.Spec.NodeName+" NotReady", func() bool {
		n, err := cp.c.Kube.CoreV1().Nodes().Get(context.Background(), p.Spec.NodeName, metav1.GetOptions{})
		return err == nil && !nodeReady(n)
	})
	cp.t.Logf("node %d NotReady after %s", node, time.Since(start).Round(100*time.Millisecond))
	if err := cp.c.StartNode(node); err != nil {
		cp.t.Fatal(err)
	}
	cp.t.Logf("node %d's kubelet started, Node Ready", node)
	return nil
}

// nodeReady is the Node's Ready condition True.
func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// fullAsEtcdSeesIt checks that the volume filled from the host (through the node's mount
// namespace) is full in the etcd container's own mount namespace: its data folder, reached
// through the container's root, has no byte left.
func (cp *campaign) fullAsEtcdSeesIt(victim string) {
	cp.t.Helper()
	ctx := context.Background()
	p := e2eutil.Pod(cp.t, cp.c, cp.ns, victim)
	pid, err := cp.c.ContainerPID(ctx, cp.ns, victim, "etcd")
	if p == nil || err != nil {
		cp.t.Logf("member %s's etcd is not running (%v): its volume's space not checked", victim, err)
		return
	}
	dir := ""
	for _, c := range p.Spec.Containers {
		for _, m := range c.VolumeMounts {
			if c.Name == "etcd" && m.Name == "data" {
				dir = m.MountPath
			}
		}
	}
	if dir == "" {
		cp.t.Fatalf("member %s's etcd container mounts no volume data", victim)
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(filepath.Join("/proc", strconv.Itoa(pid), "root", dir), &st); err != nil {
		cp.t.Fatal(err)
	}
	const tmpfsMagic = 0x01021994
	if st.Type != tmpfsMagic || st.Bavail != 0 {
		cp.t.Fatalf("member %s's %s as etcd sees it: filesystem type %#x, %d of %d blocks free; want a full tmpfs", victim, dir, st.Type, st.Bavail, st.Blocks)
	}
	cp.t.Logf("member %s's %s as etcd sees it: a tmpfs of %d MiB, 0 bytes free", victim, dir, st.Blocks*uint64(st.Bsize)>>20)
}

// sawENOSPC reports whether the full volume made etcd fail: it fails only if it needs new space
// while the volume is full (its WAL segments are preallocated, 64 MiB each). When it restarted,
// its previous run must have logged ENOSPC.
func (cp *campaign) sawENOSPC(victim string, before *corev1.Pod) {
	cp.t.Helper()
	p := e2eutil.Pod(cp.t, cp.c, cp.ns, victim)
	if p == nil || before == nil || p.UID != before.UID {
		return
	}
	if restarts(p) == restarts(before) {
		cp.t.Logf("member %s's etcd needed no new space while its volume was full", victim)
		return
	}
	logs, err := cp.c.Kube.CoreV1().Pods(cp.ns).GetLogs(victim, &corev1.PodLogOptions{Container: "etcd", Previous: true}).DoRaw(context.Background())
	if err != nil {
		cp.t.Fatal(err)
	}
	if !strings.Contains(string(logs), "no space left on device") {
		cp.t.Fatalf("member %s's etcd restarted, but its previous log does not say ENOSPC:\n%s", victim, tail(string(logs), 10))
	}
	cp.t.Logf("member %s's etcd failed with ENOSPC on the full volume", victim)
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// onRealNodesOnly fails the campaign when a member runs off the real nodes, and logs where each runs.
func (cp *campaign) onRealNodesOnly() {
	cp.t.Helper()
	var placed []string
	for _, m := range e2eutil.Members(cp.t, cp.c, cp.ns, cp.cluster) {
		p := e2eutil.Pod(cp.t, cp.c, cp.ns, m.Name)
		if p == nil {
			continue
		}
		i, err := cp.c.NodeIndex(p.Spec.NodeName)
		if err != nil || !cp.c.IsRealNode(i) {
			cp.t.Fatalf("member %s runs on %q, not on a real node", m.Name, p.Spec.NodeName)
		}
		placed = append(placed, fmt.Sprintf("%s on node %d (%d restarts)", m.Name, i, restarts(p)))
	}
	cp.t.Logf("members: %s", strings.Join(placed, ", "))
}
