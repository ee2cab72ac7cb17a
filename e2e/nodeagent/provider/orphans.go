package provider

import (
	"context"
	"path/filepath"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/cozystack/etcd-operator/e2e/nodeagent/network"
	"github.com/cozystack/etcd-operator/e2e/nodeagent/process"
)

// SweepOrphans removes what is left of pods the provider will never be told about again: pods
// deleted while no agent ran, and terminal pods (virtual-kubelet skips them) deleted later. Their
// processes are killed, their netns, volumes and addresses released. live holds the UIDs of the
// Pods bound to this node.
func (p *Provider) SweepOrphans(ctx context.Context, live map[string]bool) {
	// Pods the provider runs count as live even if the list was taken before they were created.
	p.mu.Lock()
	keep := make(map[string]bool, len(live)+len(p.pods))
	for uid := range live {
		keep[uid] = true
	}
	for _, rt := range p.pods {
		keep[string(rt.pod.UID)] = true
	}
	p.mu.Unlock()
	live = keep
	dirs, _ := filepath.Glob(filepath.Join(p.cfg.StateDir, "pods", "*"))
	for _, dir := range dirs {
		s, err := loadState(dir)
		if err != nil || s == nil || live[s.UID] {
			continue
		}
		p.cfg.Log.Info("removing orphaned pod", "dir", filepath.Base(dir), "uid", s.UID)
		for _, c := range s.Containers {
			if h, ok := process.Adopt(c.PID, c.StartTime, c.Started); c.PID != 0 && ok {
				_ = h.Signal(syscall.SIGKILL)
				select {
				case <-h.Done():
				case <-time.After(5 * time.Second):
				}
			}
		}
		if err := network.Teardown(ctx, network.NamesFor(p.cfg.NetnsPrefix, s.UID)); err != nil {
			p.cfg.Log.Info("orphan netns teardown failed", "err", err)
		}
		if err := teardownVolumes(dir); err != nil {
			p.cfg.Log.Info("orphan volume teardown failed", "err", err)
		}
		_ = p.cfg.IPAM.Release(s.UID)
		removeAllButLogs(dir)
	}
	p.cfg.IPAM.Retain(live)
}

// AdoptTerminal takes over the pods bound to this node that ended under an earlier agent (a
// graceful node shutdown, a finished job) and whose state is still on disk. virtual-kubelet never
// hands terminal pods to the provider, so without this their deletion would leave netns, volumes
// and address to the periodic sweep. They are only watched: a terminal pod never runs again.
func (p *Provider) AdoptTerminal(ctx context.Context, pods []corev1.Pod) {
	for i := range pods {
		pod := &pods[i]
		if pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed {
			continue
		}
		if s, err := loadState(p.PodDir(pod.Namespace, pod.Name)); err != nil || s == nil || s.UID != string(pod.UID) {
			continue
		}
		if err := p.CreatePod(ctx, pod); err != nil {
			p.cfg.Log.Info("adopting a terminal pod failed", "pod", pod.Namespace+"/"+pod.Name, "err", err)
		}
	}
}
