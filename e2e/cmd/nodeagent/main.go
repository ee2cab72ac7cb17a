// Command nodeagent is the node agent of the local cluster: a virtual-kubelet node whose pods run as
// local processes in per-pod network and mount namespaces. It also carries the hidden
// `container-init` subcommand that finishes starting each container.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/cozystack/etcd-operator/e2e/nodeagent/agent"
	"github.com/cozystack/etcd-operator/e2e/nodeagent/containerinit"
)

// shutdownTimeout bounds a graceful node shutdown: the pods' grace budget plus the API writes.
const shutdownTimeout = 30 * time.Second

func main() {
	if len(os.Args) > 1 && os.Args[1] == containerinit.Subcommand {
		err := containerinit.Main(os.Args[2:])
		fmt.Fprintf(os.Stderr, "container-init: %v\n", err)
		os.Exit(128)
	}
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "nodeagent: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	opts, err := agent.ParseFlags(os.Args[1:], os.Stderr)
	if err != nil {
		return err
	}
	self, err := agent.SelfPath()
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})).With("node", opts.NodeName)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	// SIGUSR1 is the harness's "the machine is shutting down" (what logind's PrepareForShutdown is
	// to the kubelet): a graceful node shutdown. Registered before the start, so that an early
	// signal waits instead of killing the agent.
	shutdown := make(chan os.Signal, 1)
	signal.Notify(shutdown, syscall.SIGUSR1)
	a, err := agent.Start(ctx, opts, nil, self, log)
	if err != nil {
		return err
	}
	log.Info("node agent ready", "stopPodsOnExit", opts.StopPodsOnExit)
	select {
	case <-ctx.Done():
		log.Info("stopping")
		a.Stop()
		return nil
	case <-shutdown:
		log.Info("graceful node shutdown")
		sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		if err := a.ShutdownNode(sctx); err != nil {
			return fmt.Errorf("graceful node shutdown: %w", err)
		}
		log.Info("node shut down")
		return nil
	case <-a.Done():
		return fmt.Errorf("node stopped: %w", a.Err())
	}
}
