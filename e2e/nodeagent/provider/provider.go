// Package provider is the virtual-kubelet provider of the local cluster's node agent: it runs the
// Pods bound to its Node as local processes, each pod in its own network namespace.
package provider

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	dto "github.com/prometheus/client_model/go"
	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/cozystack/etcd-operator/e2e/nodeagent/images"
	"github.com/cozystack/etcd-operator/e2e/nodeagent/network"
	"github.com/cozystack/etcd-operator/e2e/nodeagent/podfiles"
)

// Config is everything the provider needs to know about its node.
type Config struct {
	NodeName    string
	NodeIP      string
	Client      kubernetes.Interface
	Images      images.Table
	Network     network.Config
	NetnsPrefix string
	IPAM        *network.IPAM
	StateDir    string
	DNS         podfiles.DNS
	// BootID is the node's boot (Node status.nodeInfo.bootID): init containers that finished in
	// another boot run again.
	BootID string
	// Self is the nodeagent binary, which runs the container-init subcommand.
	Self string
	// APIServerHost/Port are injected as KUBERNETES_SERVICE_HOST/PORT (in-cluster config).
	APIServerHost, APIServerPort string
	Log                          *slog.Logger
}

// Provider implements virtual-kubelet's nodeutil.Provider and node.PodNotifier.
type Provider struct {
	cfg    Config
	mu     sync.Mutex
	pods   map[string]*podRuntime // namespace/name
	notify func(*corev1.Pod)
	// shuttingDown: a graceful node shutdown began; no new pod starts.
	shuttingDown bool
	// base outlives single pods: cancelled when the agent stops (processes keep running).
	base context.Context
	// sources reads Secrets and ConfigMaps from WatchVolumeSources' cache once it runs.
	sources *sourceCache
}

// New creates a provider; ctx bounds the pod workers' lifetime (not the pods' processes).
func New(ctx context.Context, cfg Config) (*Provider, error) {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if err := os.MkdirAll(filepath.Join(cfg.StateDir, "pods"), 0o755); err != nil {
		return nil, err
	}
	return &Provider{cfg: cfg, pods: map[string]*podRuntime{}, notify: func(*corev1.Pod) {}, base: ctx}, nil
}

func podKey(namespace, name string) string { return namespace + "/" + name }

// PodDir is where the pod's pid files, logs and volumes live.
func (p *Provider) PodDir(namespace, name string) string {
	return filepath.Join(p.cfg.StateDir, "pods", namespace+"_"+name)
}

// CreatePod starts the pod; it is idempotent so that the start-up resync re-adopts running pods.
func (p *Provider) CreatePod(_ context.Context, pod *corev1.Pod) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	key := podKey(pod.Namespace, pod.Name)
	if rt, ok := p.pods[key]; ok {
		if rt.pod.UID == pod.UID {
			return nil
		}
		return errdefs.InvalidInputf("pod %s with another UID %s is still being torn down", key, rt.pod.UID)
	}
	if p.shuttingDown {
		return fmt.Errorf("pod %s not admitted: %w", key, errNodeShuttingDown)
	}
	rt := newPodRuntime(p, pod.DeepCopy())
	p.pods[key] = rt
	go rt.run()
	return nil
}

// UpdatePod takes label/annotation/image changes; a running pod keeps its processes.
func (p *Provider) UpdatePod(_ context.Context, pod *corev1.Pod) error {
	rt := p.lookup(pod.Namespace, pod.Name)
	if rt == nil {
		return errdefs.NotFoundf("pod %s/%s is unknown", pod.Namespace, pod.Name)
	}
	rt.update(pod)
	return nil
}

// DeletePod stops the pod's processes with its grace period; the runtime then tears down the pod's
// namespaces and removes the Pod object itself (virtual-kubelet would only do so at the deadline).
func (p *Provider) DeletePod(_ context.Context, pod *corev1.Pod) error {
	rt := p.lookup(pod.Namespace, pod.Name)
	if rt == nil || rt.pod.UID != pod.UID {
		return errdefs.NotFoundf("pod %s/%s is unknown", pod.Namespace, pod.Name)
	}
	rt.terminate(pod)
	return nil
}

// forget drops a torn-down pod.
func (p *Provider) forget(rt *podRuntime) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pods[podKey(rt.pod.Namespace, rt.pod.Name)] == rt {
		delete(p.pods, podKey(rt.pod.Namespace, rt.pod.Name))
	}
}

func (p *Provider) lookup(namespace, name string) *podRuntime {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pods[podKey(namespace, name)]
}

// GetPod returns the pod with its current status.
func (p *Provider) GetPod(_ context.Context, namespace, name string) (*corev1.Pod, error) {
	rt := p.lookup(namespace, name)
	if rt == nil {
		return nil, errdefs.NotFoundf("pod %s/%s is unknown", namespace, name)
	}
	return rt.snapshot(), nil
}

// GetPodStatus returns the pod's current status.
func (p *Provider) GetPodStatus(ctx context.Context, namespace, name string) (*corev1.PodStatus, error) {
	pod, err := p.GetPod(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	return &pod.Status, nil
}

// GetPods lists the pods the provider runs.
func (p *Provider) GetPods(context.Context) ([]*corev1.Pod, error) {
	p.mu.Lock()
	rts := make([]*podRuntime, 0, len(p.pods))
	for _, rt := range p.pods {
		rts = append(rts, rt)
	}
	p.mu.Unlock()
	pods := make([]*corev1.Pod, 0, len(rts))
	for _, rt := range rts {
		pods = append(pods, rt.snapshot())
	}
	return pods, nil
}

// NotifyPods registers virtual-kubelet's status callback.
func (p *Provider) NotifyPods(_ context.Context, cb func(*corev1.Pod)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.notify = cb
}

func (p *Provider) notifier() func(*corev1.Pod) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.notify
}

// StopAll is the machine going down (--stop-pods-on-exit): every pod's processes are stopped and
// their network namespaces removed. Like a power-off, nothing of it reaches the API: the Pods keep
// their last status, the node stops heart-beating, and the next agent restarts the pods.
func (p *Provider) StopAll() {
	p.mu.Lock()
	p.notify = nil // silence: no status updates from a dying machine
	rts := make([]*podRuntime, 0, len(p.pods))
	for _, rt := range p.pods {
		rts = append(rts, rt)
	}
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, rt := range rts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rt.shutdown()
		}()
	}
	wg.Wait()
}

// GetStatsSummary returns an empty summary: the local cluster runs no metrics pipeline.
func (p *Provider) GetStatsSummary(context.Context) (*statsv1alpha1.Summary, error) {
	return &statsv1alpha1.Summary{Node: statsv1alpha1.NodeStats{NodeName: p.cfg.NodeName}}, nil
}

// GetMetricsResource returns no metrics.
func (p *Provider) GetMetricsResource(context.Context) ([]*dto.MetricFamily, error) { return nil, nil }

// containerLogPath is the log file of one container.
func (p *Provider) containerLogPath(namespace, pod, container string) string {
	return filepath.Join(p.PodDir(namespace, pod), container+".log")
}
