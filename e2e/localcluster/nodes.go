package localcluster

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"time"
)

// startNode adds node i's address to the bridge and starts its agent.
func (rc *runningCluster) startNode(ctx context.Context, i int) error {
	if c := rc.nodes[i]; c != nil && c.running() {
		return fmt.Errorf("node %d is already running", i)
	}
	if err := addNodeAddress(ctx, rc.opts.Name, i); err != nil {
		return err
	}
	if err := os.MkdirAll(rc.layout.NodeDir(i), 0o700); err != nil {
		return err
	}
	toolsDir := rc.opts.PodToolsDir
	if toolsDir == "" {
		toolsDir = rc.opts.ToolsDir
	}
	args := nodeAgentArgs(rc.opts.NodeAgentBin, rc.layout, rc.opts.Name, rc.opts.ClusterDomain, i, toolsDir, rc.opts.OperatorBin)
	c := &component{Name: fmt.Sprintf("node-%d", i), Args: args, Log: rc.layout.ComponentLog(fmt.Sprintf("node-%d", i))}
	if err := c.start(NetnsName(rc.opts.Name)); err != nil {
		return err
	}
	rc.nodes[i] = c
	return nil
}

// startNodes starts agents 1..n and waits until every Node is Ready.
func (rc *runningCluster) startNodes(ctx context.Context) error {
	if rc.opts.Nodes == 0 {
		return nil
	}
	start := time.Now()
	var idx []int
	for i := 1; i <= rc.opts.Nodes; i++ {
		if err := rc.startNode(ctx, i); err != nil {
			return err
		}
		idx = append(idx, i)
	}
	if err := rc.waitNodesReady(ctx, idx); err != nil {
		return fmt.Errorf("nodes not Ready: %w", err)
	}
	rc.phase(fmt.Sprintf("%d node agents Ready", rc.opts.Nodes), start)
	return nil
}

// stopNode is a machine going down: SIGTERM (the agent runs with --stop-pods-on-exit,
// so its pods die with it), then the whole process group.
func (rc *runningCluster) stopNode(i int) error {
	c := rc.nodes[i]
	if c == nil {
		return fmt.Errorf("node %d was never started", i)
	}
	c.stop(15 * time.Second)
	return nil
}

// nodeShutdownTimeout bounds a graceful node shutdown: the agent's pod grace budget (10 s), the
// status writes and the agent's own stop, with room to spare.
const nodeShutdownTimeout = 45 * time.Second

// shutdownNode is a graceful node shutdown (the kubelet's GracefulNodeShutdown): SIGUSR1 makes
// the agent stop its pods, report them Failed/Terminated and its Node NotReady, and exit.
func (rc *runningCluster) shutdownNode(i int) error {
	c := rc.nodes[i]
	if c == nil || !c.running() {
		return fmt.Errorf("node %d is not running", i)
	}
	if !c.stopWith(syscall.SIGUSR1, nodeShutdownTimeout) {
		return fmt.Errorf("node %d did not shut down within %s and was killed (log: %s)", i, nodeShutdownTimeout, c.Log)
	}
	if c.err != nil {
		return fmt.Errorf("node %d's graceful shutdown failed: %v (log: %s)", i, c.err, c.Log)
	}
	return nil
}

// crashNode SIGKILLs the agent only; its pods keep running and are re-adopted on start.
func (rc *runningCluster) crashNode(i int) error {
	c := rc.nodes[i]
	if c == nil {
		return fmt.Errorf("node %d was never started", i)
	}
	c.crash()
	return nil
}

// restartNode starts a stopped agent again and waits for its Node to be Ready.
func (rc *runningCluster) restartNode(ctx context.Context, i int) error {
	if i < 1 || i > rc.opts.Nodes {
		return fmt.Errorf("node %d: cluster has nodes 1..%d", i, rc.opts.Nodes)
	}
	if err := rc.startNode(ctx, i); err != nil {
		return err
	}
	return rc.waitNodesReady(ctx, []int{i})
}
