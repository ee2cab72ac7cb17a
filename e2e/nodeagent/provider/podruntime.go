package provider

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/cozystack/etcd-operator/e2e/nodeagent/network"
	"github.com/cozystack/etcd-operator/e2e/nodeagent/podfiles"
)

// ShutdownGracePeriod caps each pod's grace period when the machine goes down (--stop-pods-on-exit).
const ShutdownGracePeriod = 10 * time.Second

// retryInterval paces retries of pod setup (unbound PVC, missing Secret, ...).
const retryInterval = 2 * time.Second

// podRuntime runs one pod: network, volumes, init containers, then containers.
type podRuntime struct {
	p        *Provider
	dir      string
	names    network.Names
	finished chan struct{} // closed when run returns

	// volMu serialises writes of the pod's volumes: the set-up and the refreshes of
	// WatchVolumeSources.
	volMu sync.Mutex

	// notifyMu makes virtual-kubelet receive the snapshots in the order they were taken: it
	// keeps the last one it is given, so an older one delivered after a newer one (two
	// containers changing at once) would stick as the pod's status until the next change.
	notifyMu sync.Mutex

	mu           sync.Mutex
	pod          *corev1.Pod
	podIP        string
	phase        corev1.PodPhase
	reason       string
	message      string
	networkReady bool
	startTime    *metav1.Time
	initCs, cs   []*containerRuntime
	ecs          []*containerRuntime // ephemeral containers, in the order the API added them
	clock        conditionClock
	saved        *savedPod
	volumes      *volumeSetup
	apiStatus    *corev1.PodStatus // status of a pod that was already terminal when handed to us
	deleting     bool              // deleted through the API: tear everything down
	killing      bool              // stop the processes (deletion, --stop-pods-on-exit, node shutdown)
	nodeShutdown bool              // stopped by a graceful node shutdown: the pod ends Failed
	disrupted    bool              // ended by a node shutdown: DisruptionTarget condition
	grace        time.Duration

	runCtx  context.Context
	stopRun context.CancelFunc

	// prepared is closed once network and volumes are set up: ephemeral containers wait for it.
	prepared chan struct{}
	// ephCtx bounds the ephemeral containers: it ends with runCtx, or when the pod completes
	// (stopEph). ephMu orders their starts against that stop; ephWG counts their supervisors,
	// which are only added while !ephClosed (guarded by mu).
	ephCtx    context.Context
	stopEph   context.CancelFunc
	ephMu     sync.Mutex
	ephWG     sync.WaitGroup
	ephClosed bool
}

func newPodRuntime(p *Provider, pod *corev1.Pod) *podRuntime {
	rt := &podRuntime{
		p: p, pod: pod, dir: p.PodDir(pod.Namespace, pod.Name),
		names:    network.NamesFor(p.cfg.NetnsPrefix, string(pod.UID)),
		finished: make(chan struct{}), phase: corev1.PodPending, clock: conditionClock{},
		startTime: pod.Status.StartTime, prepared: make(chan struct{}),
	}
	rt.runCtx, rt.stopRun = context.WithCancel(p.base)
	rt.ephCtx, rt.stopEph = context.WithCancel(rt.runCtx)
	for _, c := range pod.Spec.InitContainers {
		rt.initCs = append(rt.initCs, newContainerRuntime(c, true, "ContainerCreating"))
	}
	mainReason := "ContainerCreating"
	if len(pod.Spec.InitContainers) > 0 {
		mainReason = "PodInitializing"
	}
	for _, c := range pod.Spec.Containers {
		rt.cs = append(rt.cs, newContainerRuntime(c, false, mainReason))
	}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		rt.apiStatus = pod.Status.DeepCopy()
	}
	rt.addEphemeralLocked(pod.Spec.EphemeralContainers) // no one else knows rt yet
	return rt
}

// allLocked lists every container: init, regular, ephemeral; rt.mu is held.
func (rt *podRuntime) allLocked() []*containerRuntime {
	all := make([]*containerRuntime, 0, len(rt.initCs)+len(rt.cs)+len(rt.ecs))
	return append(append(append(all, rt.initCs...), rt.cs...), rt.ecs...)
}

func (rt *podRuntime) log() func(msg string, args ...any) {
	return rt.p.cfg.Log.With("pod", rt.pod.Namespace+"/"+rt.pod.Name).Info
}

// run is the pod's worker goroutine.
func (rt *podRuntime) run() {
	defer close(rt.finished)
	defer rt.teardown()
	defer rt.closeEphemeral() // before the teardown: their processes go first
	if rt.apiStatus != nil || rt.restoreTerminal() {
		<-rt.runCtx.Done()
		return
	}
	if !rt.prepareWithRetry() {
		return
	}
	close(rt.prepared)
	if !rt.runInitContainers() {
		return
	}
	codes, stopped := rt.runContainers()
	if stopped {
		return
	}
	rt.complete(finalPhase(codes))
}

// complete records a terminal phase and, like the kubelet removing the sandbox, frees the pod's
// network; volumes stay until the Pod is deleted.
func (rt *podRuntime) complete(phase corev1.PodPhase) {
	rt.stopEphemeral()
	rt.setPhase(phase)
	if !rt.pod.Spec.HostNetwork {
		if err := network.Teardown(rt.runCtx, rt.names); err != nil {
			rt.log()("network teardown failed", "err", err)
		}
		_ = rt.p.cfg.IPAM.Release(string(rt.pod.UID))
	}
	<-rt.runCtx.Done()
}

func (rt *podRuntime) prepareWithRetry() bool {
	for {
		err := rt.prepare(rt.runCtx)
		if err == nil {
			return true
		}
		if !errors.Is(err, errNotReady) {
			rt.log()("pod setup failed, retrying", "err", err)
		}
		rt.mu.Lock()
		for _, c := range rt.allLocked() {
			c.state = waiting("ContainerCreating", err.Error())
		}
		rt.mu.Unlock()
		rt.changed()
		if !sleepCtx(rt.runCtx, retryInterval) {
			return false
		}
	}
}

// prepare sets up the pod's network, files and volumes; safe to repeat.
func (rt *podRuntime) prepare(ctx context.Context) error {
	pod := rt.pod
	if err := os.MkdirAll(filepath.Join(rt.dir, "etc"), 0o755); err != nil {
		return err
	}
	if err := rt.loadSaved(); err != nil {
		return err
	}
	ip := rt.p.cfg.NodeIP
	if !pod.Spec.HostNetwork {
		addr, err := rt.p.cfg.IPAM.Allocate(string(pod.UID))
		if err != nil {
			return err
		}
		if err := rt.p.cfg.Network.Setup(ctx, rt.names, addr); err != nil {
			return err
		}
		ip = addr.String()
	}
	rt.mu.Lock()
	rt.podIP, rt.networkReady = ip, true
	rt.pod.Status.PodIP, rt.pod.Status.HostIP = ip, rt.p.cfg.NodeIP
	rt.pod.Status.PodIPs = []corev1.PodIP{{IP: ip}}
	if rt.startTime == nil {
		rt.startTime = ptr.To(metav1.Now())
	}
	rt.saved.IP = ip
	rt.mu.Unlock()
	if err := rt.writeEtcFiles(ip); err != nil {
		return err
	}
	rt.volMu.Lock()
	vs, err := rt.p.setupVolumes(ctx, rt.snapshotSpec(), rt.dir)
	rt.volMu.Unlock()
	rt.mu.Lock()
	rt.volumes = vs
	rt.mu.Unlock()
	if err != nil {
		return err
	}
	return rt.save()
}

// loadSaved restores the state of an earlier agent run for this very pod (same UID).
func (rt *podRuntime) loadSaved() error {
	if rt.saved != nil {
		return nil
	}
	s, err := loadState(rt.dir)
	if err != nil {
		return err
	}
	if s == nil || s.UID != string(rt.pod.UID) {
		s = &savedPod{UID: string(rt.pod.UID), Containers: map[string]savedContainer{}}
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.saved = s
	for _, c := range rt.allLocked() {
		if sc, ok := s.Containers[c.name]; ok {
			c.restore(sc, rt.dir)
			rt.p.cfg.Log.Info("restored container", "pod", rt.pod.Name, "container", c.name, "pid", sc.PID, "adopted", c.handle != nil)
		}
	}
	switch boot := rt.p.cfg.BootID; {
	case s.initFromEarlierBoot(boot):
		rt.rerunInitLocked()
		rt.p.cfg.Log.Info("node rebooted: init containers run again", "pod", rt.pod.Name)
	case s.InitBoot == "" && s.InitDone:
		s.InitBoot = boot // an older agent's state: this boot's, so that the next reboot is seen
	}
	return nil
}

// rerunInitLocked is the kubelet's new sandbox after a reboot: the init containers run again, in
// order. A finished one keeps its restart count and shows that run as lastState; rt.mu is held.
func (rt *podRuntime) rerunInitLocked() {
	rt.saved.InitDone, rt.saved.InitBoot = false, ""
	for _, c := range rt.initCs {
		if c.finished != nil {
			c.lastState, c.state, c.finished = c.state, waiting("ContainerCreating", ""), nil
		}
	}
}

func (rt *podRuntime) save() error {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	for _, c := range rt.allLocked() {
		rt.saved.Containers[c.name] = c.toSaved()
	}
	return saveState(rt.dir, rt.saved)
}

func (rt *podRuntime) writeEtcFiles(ip string) error {
	hostResolv, _ := os.ReadFile("/etc/resolv.conf")
	pod := rt.snapshotSpec()
	files := map[string]string{
		"resolv.conf": podfiles.ResolvConf(pod, rt.p.cfg.DNS, string(hostResolv)),
		"hosts":       podfiles.Hosts(pod, ip, rt.p.cfg.DNS.Domain),
		"hostname":    podfiles.Hostname(pod) + "\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(rt.dir, "etc", name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func (rt *podRuntime) etcFiles() map[string]string {
	return map[string]string{
		"/etc/resolv.conf": filepath.Join(rt.dir, "etc", "resolv.conf"),
		"/etc/hosts":       filepath.Join(rt.dir, "etc", "hosts"),
		"/etc/hostname":    filepath.Join(rt.dir, "etc", "hostname"),
	}
}

// runInitContainers runs the init containers in order; false means the pod stops here.
func (rt *podRuntime) runInitContainers() bool {
	rt.mu.Lock()
	done := rt.saved.InitDone
	rt.mu.Unlock()
	if done {
		return true
	}
	for _, c := range rt.initCs {
		code, stopped := rt.supervise(c)
		if stopped {
			return false
		}
		if code != 0 {
			rt.complete(corev1.PodFailed)
			return false
		}
	}
	rt.mu.Lock()
	rt.saved.InitDone = true
	rt.mu.Unlock()
	if err := rt.save(); err != nil {
		rt.log()("saving pod state failed", "err", err)
	}
	return true
}

// runContainers supervises all containers until none will be restarted.
func (rt *podRuntime) runContainers() (codes []int, stopped bool) {
	rt.setPhase(corev1.PodRunning)
	codes = make([]int, len(rt.cs))
	stops := make([]bool, len(rt.cs))
	var wg sync.WaitGroup
	for i, c := range rt.cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i], stops[i] = rt.supervise(c)
		}()
	}
	wg.Wait()
	for _, s := range stops {
		stopped = stopped || s
	}
	return codes, stopped
}

func (rt *podRuntime) setPhase(phase corev1.PodPhase) {
	rt.mu.Lock()
	rt.phase = phase
	rt.mu.Unlock()
	rt.changed()
}

// changed pushes the current status to virtual-kubelet.
func (rt *podRuntime) changed() {
	rt.notifyMu.Lock()
	defer rt.notifyMu.Unlock()
	if notify := rt.p.notifier(); notify != nil {
		notify(rt.snapshot())
	}
}

// snapshot is a copy of the pod with its current status.
func (rt *podRuntime) snapshot() *corev1.Pod {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	pod := rt.pod.DeepCopy()
	if rt.apiStatus != nil {
		pod.Status = *rt.apiStatus.DeepCopy()
		return pod
	}
	v := podView{
		Phase: rt.phase, Reason: rt.reason, Message: rt.message, PodIP: rt.podIP, HostIP: rt.p.cfg.NodeIP,
		NetworkReady: rt.networkReady, StartTime: rt.startTime, QOSClass: pod.Status.QOSClass, Disrupted: rt.disrupted,
	}
	for _, c := range rt.initCs {
		v.InitContainers = append(v.InitContainers, c.view())
	}
	for _, c := range rt.cs {
		v.Containers = append(v.Containers, c.view())
	}
	for _, c := range rt.ecs {
		v.EphemeralContainers = append(v.EphemeralContainers, c.view())
	}
	pod.Status = buildStatus(v, rt.clock, time.Now())
	return pod
}

// snapshotSpec is a copy of the pod (spec, metadata, known IPs) for file rendering.
func (rt *podRuntime) snapshotSpec() *corev1.Pod {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.pod.DeepCopy()
}

// update takes the mutable parts of a changed pod: labels and annotations (for the downward
// API), and new ephemeral containers, which start right away. The spec keeps them too, so that
// virtual-kubelet's comparison with GetPod settles.
func (rt *podRuntime) update(pod *corev1.Pod) {
	rt.mu.Lock()
	rt.pod.Labels, rt.pod.Annotations = pod.Labels, pod.Annotations
	added := rt.addEphemeralLocked(pod.Spec.EphemeralContainers)
	if added {
		rt.pod.Spec.EphemeralContainers = append([]corev1.EphemeralContainer{}, pod.Spec.EphemeralContainers...)
	}
	rt.mu.Unlock()
	if added {
		rt.changed() // report them Waiting at once, as the kubelet's first status does
	}
}

// terminate stops the pod for an API deletion, with the deletion's grace period.
func (rt *podRuntime) terminate(pod *corev1.Pod) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.deleting {
		return
	}
	rt.deleting, rt.killing = true, true
	rt.grace = gracePeriod(pod)
	rt.pod.DeletionTimestamp = pod.DeletionTimestamp
	rt.pod.DeletionGracePeriodSeconds = pod.DeletionGracePeriodSeconds
	rt.stopRun()
}

// shutdown kills the pod's processes because the machine goes down (power-off semantics: the
// API hears nothing; the Pod stays as it was and is restarted by the next agent).
func (rt *podRuntime) shutdown() {
	rt.mu.Lock()
	if !rt.killing {
		rt.killing = true
		// Like the kubelet's shutdownGracePeriod: the whole machine has a budget, not each pod.
		rt.grace = min(gracePeriod(rt.pod), ShutdownGracePeriod)
	}
	rt.stopRun()
	rt.mu.Unlock()
	<-rt.finished
}

func gracePeriod(pod *corev1.Pod) time.Duration {
	if pod.DeletionGracePeriodSeconds != nil {
		return time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
	}
	return time.Duration(ptr.Deref(pod.Spec.TerminationGracePeriodSeconds, 30)) * time.Second
}

// teardown runs when the worker ends: on deletion everything goes, on a machine shutdown the
// network goes (and the address, when a graceful shutdown ended the pod for good), on a plain
// agent exit nothing is touched.
func (rt *podRuntime) teardown() {
	rt.mu.Lock()
	deleting, killing, ended := rt.deleting, rt.killing, rt.nodeShutdown
	rt.mu.Unlock()
	if !killing {
		return
	}
	rt.stopLeftovers()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := network.Teardown(ctx, rt.names); err != nil {
		rt.log()("network teardown failed", "err", err)
	}
	if !deleting {
		if err := unmountMemoryVolumes(rt.dir); err != nil {
			rt.log()("unmount failed", "err", err)
		}
		if ended {
			_ = rt.p.cfg.IPAM.Release(string(rt.pod.UID))
		}
		return
	}
	rt.volMu.Lock() // a refresh in flight must not re-create what is removed
	if err := teardownVolumes(rt.dir); err != nil {
		rt.log()("volume teardown failed", "err", err)
	}
	rt.volMu.Unlock()
	_ = rt.p.cfg.IPAM.Release(string(rt.pod.UID))
	removeAllButLogs(rt.dir)
	rt.finishDeletion(ctx)
}

// stopLeftovers stops processes no supervisor stopped: re-adopted containers of a pod deleted
// before its supervisors ran.
func (rt *podRuntime) stopLeftovers() {
	rt.mu.Lock()
	var wg sync.WaitGroup
	for _, c := range rt.allLocked() {
		if h := c.handle; h != nil {
			wg.Add(1)
			go func() {
				defer wg.Done()
				h.Stop(rt.grace)
				term := rt.ended(c, h)
				rt.mu.Lock()
				c.handle, c.ready, c.started = nil, false, false
				c.state = term
				rt.mu.Unlock()
			}()
		}
	}
	rt.mu.Unlock()
	wg.Wait()
}

// finishDeletion reports the terminal status and removes the Pod object at once (grace 0): all
// its processes are gone, and virtual-kubelet would otherwise wait for the grace deadline.
func (rt *podRuntime) finishDeletion(ctx context.Context) {
	rt.mu.Lock()
	if rt.phase != corev1.PodSucceeded && rt.phase != corev1.PodFailed {
		var codes []int
		for _, c := range rt.cs {
			codes = append(codes, c.exitCode())
		}
		rt.phase = finalPhase(codes)
	}
	rt.mu.Unlock()
	rt.changed()
	// Forget first: the owner may recreate a Pod of the same name as soon as this one is gone.
	rt.p.forget(rt)
	pod := rt.snapshotSpec()
	opts := metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0), Preconditions: metav1.NewUIDPreconditions(string(pod.UID))}
	err := rt.p.cfg.Client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, opts)
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		rt.log()("removing the Pod object failed", "err", err)
	}
	rt.log()("pod deleted")
}

// removeAllButLogs empties a deleted pod's folder; container logs stay for post-mortems.
func removeAllButLogs(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if filepath.Ext(e.Name()) != ".log" {
			_ = os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func (rt *podRuntime) String() string { return fmt.Sprintf("%s/%s", rt.pod.Namespace, rt.pod.Name) }
