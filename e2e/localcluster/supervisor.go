package localcluster

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/go-logr/logr/funcr"
	ctrl "sigs.k8s.io/controller-runtime"
)

// Supervise is the daemon behind `localcluster supervise`: it brings the cluster up,
// publishes state.json, serves the control socket and tears everything down on
// SIGTERM/SIGINT or when ownerPID (a test binary) dies. It owns every process.
func Supervise(optionsFile string, ownerPID int) error {
	var o Options
	if err := readJSON(optionsFile, &o); err != nil {
		return err
	}
	l := Layout{Dir: filepath.Join(o.StateRoot, o.Name)}
	logger := log.New(os.Stderr, "", log.LstdFlags|log.Lmicroseconds)
	ctrl.SetLogger(funcr.New(func(prefix, args string) { logger.Println(prefix, args) }, funcr.Options{}))
	if err := os.WriteFile(l.LockFile(), fmt.Appendf(nil, "%d\n", os.Getpid()), 0o600); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	rc := &runningCluster{opts: o, layout: l, dialer: Dialer{Netns: NetnsName(o.Name)},
		nodes: map[int]*component{}, realNodes: map[int]*realNode{}, logf: logger.Printf}
	st := &State{Name: o.Name, Dir: l.Dir, Netns: NetnsName(o.Name), SupervisorPID: os.Getpid(), Nodes: o.Nodes,
		RealNodes: realNodeIndices(o), ClusterDomain: o.ClusterDomain,
		Kubeconfig: l.AdminKubeconfig(), InnerKubeconfig: l.InnerKubeconfig(), ControlSocket: l.ControlSocket(),
		StartedAt: time.Now()}
	upCtx, cancelUp := context.WithCancel(ctx)
	defer cancelUp()
	go watchOwner(upCtx, ownerPID, stop)
	err := rc.up(upCtx, st)
	if err != nil {
		logger.Printf("up failed: %v", err)
		st.Error = err.Error()
		_ = writeJSON(l.StateFile(), st)
		cancelUp()
		// Keep the logs for the launcher, unless nobody is left to read them (signal / owner gone).
		rc.teardown(ctx.Err() != nil && os.Getenv("LC_KEEP") != "1")
		return err
	}
	st.Ready, st.ReadyAfter, st.Timings = true, Duration(time.Since(st.StartedAt)), rc.timings
	if err := writeJSON(l.StateFile(), st); err != nil {
		return err
	}
	logger.Printf("cluster %s ready after %s", o.Name, time.Since(st.StartedAt).Round(time.Millisecond))
	srv, err := serveControl(l.ControlSocket(), rc, st)
	if err != nil {
		return err
	}
	<-upCtx.Done()
	logger.Printf("shutting down")
	_ = srv.Close()
	cancelUp()
	rc.teardown(os.Getenv("LC_KEEP") != "1")
	return nil
}

// watchOwner calls stop when the owner process (0 = none) disappears: a test binary
// that was killed must not leave its cluster behind.
func watchOwner(ctx context.Context, owner int, stop func()) {
	if owner <= 0 {
		return
	}
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if !pidAlive(owner) {
				stop()
				return
			}
		}
	}
}

// up runs every phase of bringing the cluster up.
func (rc *runningCluster) up(ctx context.Context, st *State) error {
	o := rc.opts
	tools, err := resolveTools(o.ToolsDir, o.ModuleRoot)
	if err != nil {
		return err
	}
	rc.tools = tools
	if o.RealNodes > 0 {
		if rc.realTools, err = resolveRealNodeTools(o.ToolsDir, o.ModuleRoot); err != nil {
			return err
		}
		st.Ctr = rc.realTools.Ctr
	}
	start := time.Now()
	if err := rc.prepareFiles(); err != nil {
		return fmt.Errorf("pki/kubeconfigs: %w", err)
	}
	rc.phase("pki+kubeconfigs", start)
	start = time.Now()
	if err := createClusterNetns(ctx, o.Name); err != nil {
		return err
	}
	rc.phase("netns", start)
	boot := rc.bootRealNodes(ctx)
	defer boot.stop()
	if err := rc.startControlPlane(ctx); err != nil {
		return err
	}
	if err := rc.bootstrapObjects(ctx); err != nil {
		return err
	}
	if err := runProvisioner(ctx, rc.innerCfg, rc.layout.PVDir()); err != nil {
		return fmt.Errorf("provisioner: %w", err)
	}
	fwd, err := startForwarder("127.0.0.1:0", rc.dialer, net.JoinHostPort(GatewayIP, fmt.Sprint(APIServerPort)))
	if err != nil {
		return err
	}
	st.APIServerPort = fwd.Port()
	spec := kubeconfigSpec{Path: rc.layout.AdminKubeconfig(), CertFile: "admin", Server: fmt.Sprintf("https://127.0.0.1:%d", fwd.Port())}
	if err := writeKubeconfig(rc.layout.PKI(), spec, "lc-"+o.Name); err != nil {
		return err
	}
	if err := rc.startNodes(ctx); err != nil {
		return err
	}
	if err := rc.startRealNodes(ctx, boot); err != nil {
		return err
	}
	if err := rc.startKubeProxy(ctx); err != nil {
		return err
	}
	start = time.Now()
	if err := rc.waitDNS(ctx); err != nil {
		return fmt.Errorf("CoreDNS: %w", err)
	}
	rc.phase("dns", start)
	return nil
}

// teardown stops every process and removes the netns and mounts; removeDir also
// deletes the state folder (kept after a failed up, for its logs).
func (rc *runningCluster) teardown(removeDir bool) {
	start := time.Now()
	rc.stopAll()
	if err := cleanupLeftovers(rc.opts.Name, rc.layout, removeDir); err != nil {
		rc.logf("cleanup: %v", err)
	}
	rc.logf("teardown took %s", time.Since(start).Round(time.Millisecond))
}

// errNotRoot is returned on every entry point when not running as root.
var errNotRoot = errors.New("the local cluster needs root (network namespaces, bind mounts)")

func requireRoot() error {
	if os.Geteuid() != 0 {
		return errNotRoot
	}
	return nil
}
