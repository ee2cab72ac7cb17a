package localcluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/cozystack/etcd-operator/internal/ociimage"
)

// realNode is the supervisor's view of one real node: the process holding its private mount
// namespace, its containerd and its kubelet (the latter two entered into that namespace).
type realNode struct {
	i          int
	layout     realNodeLayout
	cgroupRoot string
	imported   bool // the images are in containerd's root (on disk: they survive a node stop)

	holder, containerd, kubelet *component
}

// RealNodeKindLabel marks the Nodes of the local cluster by kind: value RealNodeKind for a
// kubelet with containerd, the node agents carry no such label.
const (
	RealNodeKindLabel = "localcluster.etcd-operator.io/node-kind"
	RealNodeKind      = "real"
)

// realNodeIndices are the indices of the real nodes: after the node agents'.
func realNodeIndices(o Options) []int {
	var idx []int
	for i := o.Nodes + 1; i <= o.Nodes+o.RealNodes; i++ {
		idx = append(idx, i)
	}
	return idx
}

// isRealNode reports whether node i is a real node of the cluster.
func (o Options) isRealNode(i int) bool { return i > o.Nodes && i <= o.Nodes+o.RealNodes }

// realNodeBoot is the real nodes' boot, running while the control plane starts.
type realNodeBoot struct {
	g      errgroup.Group
	cancel context.CancelFunc
	start  time.Time
}

// bootRealNodes boots every real node side by side in the background (folders, mount namespace,
// containerd, the images imported): a boot needs the cluster's netns and files only, and its
// imports take most of a real node's start, so they run while the control plane starts.
// startRealNodes waits for it; call stop on every path out of up.
func (rc *runningCluster) bootRealNodes(ctx context.Context) *realNodeBoot {
	ctx, cancel := context.WithCancel(ctx)
	b := &realNodeBoot{cancel: cancel, start: time.Now()}
	for _, i := range realNodeIndices(rc.opts) {
		n := rc.realNode(i) // the records first, here: the map is not written concurrently
		b.g.Go(func() error {
			if err := rc.bootRealNode(ctx, n); err != nil {
				return fmt.Errorf("real node %d: %w", i, err)
			}
			return nil
		})
	}
	return b
}

// stop cancels the boots still running (up failed before startRealNodes) and waits for them.
func (b *realNodeBoot) stop() {
	b.cancel()
	_ = b.g.Wait()
}

// startRealNodes waits for the real nodes' boot, starts their kubelets and waits until all are
// Ready.
func (rc *runningCluster) startRealNodes(ctx context.Context, boot *realNodeBoot) error {
	idx := realNodeIndices(rc.opts)
	if len(idx) == 0 {
		return nil
	}
	if err := boot.g.Wait(); err != nil {
		return err
	}
	rc.phase(fmt.Sprintf("%d real nodes booted (in parallel)", len(idx)), boot.start)
	start := time.Now()
	for _, i := range idx {
		if err := rc.startRealNode(ctx, i); err != nil {
			return fmt.Errorf("real node %d: %w", i, err)
		}
	}
	if err := rc.waitNodesReady(ctx, idx); err != nil {
		return fmt.Errorf("real nodes not Ready: %w", err)
	}
	rc.phase(fmt.Sprintf("%d real nodes Ready", len(idx)), start)
	return nil
}

// realNode returns node i's record, creating it on first use.
func (rc *runningCluster) realNode(i int) *realNode {
	if n := rc.realNodes[i]; n != nil {
		return n
	}
	n := &realNode{i: i, layout: realNodeLayout{Dir: rc.layout.NodeDir(i)}, cgroupRoot: RealNodeCgroupRoot(rc.opts.Name, i)}
	rc.realNodes[i] = n
	return n
}

// startRealNode starts whatever of node i is not running (all of it on first start or after
// stopRealNode, only the kubelet after stopKubelet); it does not wait for Ready.
func (rc *runningCluster) startRealNode(ctx context.Context, i int) error {
	n := rc.realNode(i)
	if !n.holder.running() {
		if err := rc.bootRealNode(ctx, n); err != nil {
			return err
		}
	}
	if n.kubelet.running() {
		return nil
	}
	n.kubelet = rc.realNodeComponent(n, "kubelet", rc.kubeletArgs(n))
	return n.kubelet.start(NetnsName(rc.opts.Name))
}

// bootRealNode prepares node i's folders, cgroups and mount namespace, then starts containerd
// and imports the images: what a machine's boot does before its kubelet starts.
func (rc *runningCluster) bootRealNode(ctx context.Context, n *realNode) error {
	if err := addNodeAddress(ctx, rc.opts.Name, n.i); err != nil {
		return err
	}
	if err := rc.writeRealNodeFiles(n); err != nil {
		return err
	}
	if err := createCgroupRoot(n.cgroupRoot); err != nil {
		return err
	}
	n.holder = &component{Name: fmt.Sprintf("node-%d-mntns", n.i), Log: rc.layout.ComponentLog(fmt.Sprintf("node-%d-mntns", n.i)),
		Args: []string{"unshare", "--mount", "--propagation", "private", "--", "sh", "-c", n.layout.mountNamespaceScript()}}
	if err := n.holder.start(NetnsName(rc.opts.Name)); err != nil {
		return err
	}
	if err := poll(ctx, 30*time.Second, func() (bool, error) {
		_, err := os.Stat(n.layout.NamespaceReady())
		return err == nil, n.holder.exitError()
	}); err != nil {
		return fmt.Errorf("mount namespace: %w", err)
	}
	n.containerd = rc.realNodeComponent(n, "containerd", []string{rc.realTools.Containerd, "--config", n.layout.ContainerdConfig()})
	if err := n.containerd.start(NetnsName(rc.opts.Name)); err != nil {
		return err
	}
	if err := waitSocket(ctx, n.layout.Socket(), n.containerd); err != nil {
		return err
	}
	if n.imported {
		return nil
	}
	if err := rc.importImages(ctx, n); err != nil {
		return err
	}
	n.imported = true
	return nil
}

// realNodeComponent is a process of node n entered into its mount namespace, with the
// containerd folder (for the shim) and the system folders (runc, mount) on its PATH.
func (rc *runningCluster) realNodeComponent(n *realNode, name string, args []string) *component {
	log := fmt.Sprintf("node-%d-%s", n.i, name)
	return &component{Name: log, Args: args, Log: rc.layout.ComponentLog(log),
		Mntns: fmt.Sprintf("/proc/%d/ns/mnt", n.holder.cmd.Process.Pid),
		Env:   []string{"PATH=" + filepath.Dir(rc.realTools.Containerd) + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}}
}

// writeRealNodeFiles creates node n's folders and writes its configuration files.
func (rc *runningCluster) writeRealNodeFiles(n *realNode) error {
	l := n.layout
	// A boot starts without the previous one's volatile state (containerd's state folder
	// and /run/containerd are tmpfs on a machine).
	volatile := []string{l.ContainerdState(), l.NamespaceReady()}
	for _, m := range l.overlayMounts() {
		if m.Volatile {
			volatile = append(volatile, m.Upper, m.Work)
		}
	}
	for _, d := range volatile {
		if err := os.RemoveAll(d); err != nil {
			return err
		}
	}
	dirs := []string{l.ContainerdRoot(), l.ContainerdState(), filepath.Dir(l.Socket()), l.CNIConfDir(),
		l.KubeletRoot(), l.PodLogs(), l.VolumePlugins(), l.path("sysctl")}
	for _, m := range l.overlayMounts() {
		dirs = append(dirs, m.Upper, m.Work)
	}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	files := map[string]string{
		l.ContainerdConfig():                            containerdConfig(l, ociimage.PauseImage),
		filepath.Join(l.CNIConfDir(), "10-lc.conflist"): cniConfig(n.i),
		l.KubeletConfig(): kubeletConfig(kubeletConfigParams{Layout: l, NodeIP: NodeIP(n.i), CgroupRoot: n.cgroupRoot,
			ClusterDomain: rc.opts.ClusterDomain, PKI: rc.layout.PKI(), CertFile: fmt.Sprintf("node-%d-serving", n.i)}),
	}
	for _, m := range l.sysctlMounts() {
		files[m.File] = m.Value + "\n"
	}
	files[l.bootIDMount().File] = string(uuid.NewUUID()) + "\n" // a new boot
	for path, content := range files {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func (rc *runningCluster) kubeletArgs(n *realNode) []string {
	return []string{rc.realTools.Kubelet,
		"--config=" + n.layout.KubeletConfig(),
		"--kubeconfig=" + nodeKubeconfig(rc.layout, n.i),
		"--hostname-override=" + NodeName(rc.opts.Name, n.i),
		"--node-ip=" + NodeIP(n.i),
		"--root-dir=" + n.layout.KubeletRoot(),
		"--cert-dir=" + filepath.Join(n.layout.KubeletRoot(), "pki"),
		"--node-labels=" + RealNodeKindLabel + "=" + RealNodeKind,
	}
}

// waitSocket waits until a unix socket accepts connections.
func waitSocket(ctx context.Context, path string, owner *component) error {
	return poll(ctx, time.Minute, func() (bool, error) {
		if err := owner.exitError(); err != nil {
			return false, err
		}
		c, err := net.Dial("unix", path)
		if err != nil {
			return false, nil
		}
		c.Close()
		return true, nil
	})
}

// checkImagesDir refuses an images folder without the pause image: no Pod could start.
func checkImagesDir(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, ociimage.PauseArchive)); err != nil {
		return fmt.Errorf("images folder %q has no %s (the Pods' sandbox image %s); run `make images`: %w",
			dir, ociimage.PauseArchive, ociimage.PauseImage, err)
	}
	return nil
}

// importImages imports every image tarball of the images folder into the node's containerd
// (namespace k8s.io, the CRI's), before its kubelet registers: no registry is reachable, Pods
// run what was imported.
func (rc *runningCluster) importImages(ctx context.Context, n *realNode) error {
	tars, err := filepath.Glob(filepath.Join(rc.opts.ImagesDir, "*.tar"))
	if err != nil {
		return err
	}
	if len(tars) == 0 {
		return fmt.Errorf("no image tarballs (*.tar) in the images folder %q (run `make images`)", rc.opts.ImagesDir)
	}
	start := time.Now()
	for _, t := range tars {
		out, err := exec.CommandContext(ctx, rc.realTools.Ctr, "--address", n.layout.Socket(), "-n", "k8s.io",
			"images", "import", t).CombinedOutput()
		if err != nil {
			return fmt.Errorf("ctr images import %s: %w: %s", t, err, strings.TrimSpace(string(out)))
		}
	}
	rc.logf("node %d: imported %d images in %s", n.i, len(tars), time.Since(start).Round(time.Millisecond))
	return nil
}

// stopKubelet stops node i's kubelet only (SIGTERM); its containers keep running, as under a
// kubelet restart on a machine.
func (rc *runningCluster) stopKubelet(i int) error {
	n := rc.realNodes[i]
	if n == nil || !n.kubelet.running() {
		return fmt.Errorf("node %d's kubelet is not running", i)
	}
	n.kubelet.stop(15 * time.Second)
	rc.logf("node %d: kubelet stopped (its containers keep running)", i)
	return nil
}

// crashKubelet SIGKILLs node i's kubelet only.
func (rc *runningCluster) crashKubelet(i int) error {
	n := rc.realNodes[i]
	if n == nil || !n.kubelet.running() {
		return fmt.Errorf("node %d's kubelet is not running", i)
	}
	n.kubelet.crash()
	rc.logf("node %d: kubelet SIGKILLed (its containers keep running)", i)
	return nil
}

// stopRealNode takes node i down like a machine losing power: the kubelet and every container
// are SIGKILLed, then containerd and the mount namespace (its mounts go with it) end.
func (rc *runningCluster) stopRealNode(i int) error {
	n := rc.realNodes[i]
	if n == nil {
		return fmt.Errorf("node %d was never started", i)
	}
	n.kubelet.crash()
	err := killCgroups(cgroupTreesOf(n.cgroupRoot), 10*time.Second)
	n.containerd.stop(5 * time.Second)
	n.holder.stop(time.Second)
	rc.logf("node %d: stopped (kubelet, containers, containerd and mount namespace killed)", i)
	return err
}

// cgroupTreesOf lists root's folder in every hierarchy that exists.
func cgroupTreesOf(root string) []string {
	hs, _ := cgroupHierarchies()
	var out []string
	for _, h := range hs {
		if _, err := os.Stat(filepath.Join(h, root)); err == nil {
			out = append(out, filepath.Join(h, root))
		}
	}
	return out
}

// stopRealNodes ends every real node at teardown: the kubelets first (SIGTERM; they do not
// stop Pods), then every container, then the containerds and mount namespaces.
func (rc *runningCluster) stopRealNodes() {
	var kubelets []*component
	for _, n := range rc.realNodes {
		kubelets = append(kubelets, n.kubelet)
	}
	stopParallel(kubelets, 10*time.Second)
	for i := range rc.realNodes {
		if err := rc.stopRealNode(i); err != nil {
			rc.logf("stop real node %d: %v", i, err)
		}
	}
}

// RealNodeSocket is the containerd socket of real node i of the cluster whose folder is dir.
func RealNodeSocket(dir string, i int) string {
	return realNodeLayout{Dir: Layout{Dir: dir}.NodeDir(i)}.Socket()
}

// byKind picks the node operation for node i's kind.
func (rc *runningCluster) byKind(agent, real func(i int) error) func(i int) error {
	return func(i int) error {
		if rc.opts.isRealNode(i) {
			return real(i)
		}
		return agent(i)
	}
}

func errNotRealNode(i int) error { return fmt.Errorf("node %d is a node agent, not a real node", i) }

// errRealNodeShutdown: the kubelet's graceful node shutdown waits for systemd-logind's
// PrepareForShutdown signal, which this machine (no systemd) never sends.
func errRealNodeShutdown(i int) error {
	return fmt.Errorf("node %d is a real node: graceful node shutdown needs systemd-logind; use StopNode", i)
}

// restartRealNode starts whatever of node i is stopped and waits until its Node is Ready.
func (rc *runningCluster) restartRealNode(ctx context.Context, i int) error {
	if err := rc.startRealNode(ctx, i); err != nil {
		return err
	}
	return rc.waitNodesReady(ctx, []int{i})
}

// RealNodeKubeletRoot is the kubelet's root folder of real node i of the cluster in dir.
func RealNodeKubeletRoot(dir string, i int) string {
	return realNodeLayout{Dir: Layout{Dir: dir}.NodeDir(i)}.KubeletRoot()
}
