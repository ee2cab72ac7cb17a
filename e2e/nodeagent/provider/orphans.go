package provider

import (
	"context"
	"path/filepath"
	"syscall"
	"time"

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
