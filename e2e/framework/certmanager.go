package framework

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/cozystack/etcd-operator/e2e/localcluster"
)

// CertManager is cert-manager's controller (Certificates, CertificateRequests, and the CA and
// SelfSigned issuers) running against a local cluster. There is no webhook: the apiserver
// validates cert-manager's objects against the CRD schemas only.
type CertManager struct {
	Tools   localcluster.CertManagerTools
	LogPath string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

// StartCertManager installs cert-manager's CRDs into c and runs its controller, built by
// `make tools`, until tb ends. Run one at a time per cluster: two controllers would fight
// over the same objects.
func StartCertManager(tb testing.TB, c *Cluster) *CertManager {
	tb.Helper()
	cm, err := StartCertManagerProcess(c)
	if err != nil {
		tb.Fatalf("cert-manager: %v", err)
	}
	tb.Logf("cert-manager %s controller running (log %s)", cm.Tools.Version, cm.LogPath)
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Logf("cert-manager log, last lines:\n%s", cm.LogTail(40))
		}
		if err := cm.Stop(); err != nil {
			tb.Errorf("cert-manager: %v", err)
		}
	})
	return cm
}

// StartCertManagerProcess is StartCertManager without a test; the caller must call Stop.
// The controller runs inside the cluster's netns (as the operator does), so tearing the
// cluster down ends it even when the test binary dies without cleaning up.
func StartCertManagerProcess(c *Cluster) (*CertManager, error) {
	tools, err := localcluster.ResolveCertManager(localcluster.Options{StateRoot: c.root})
	if err != nil {
		return nil, err
	}
	if _, err := envtest.InstallCRDs(c.Config, envtest.CRDInstallOptions{
		Paths: []string{tools.CRDs}, ErrorIfPathMissing: true,
	}); err != nil {
		return nil, fmt.Errorf("install CRDs from %s: %w", tools.CRDs, err)
	}
	logDir := filepath.Join(c.State.Dir, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, err
	}
	cm := &CertManager{Tools: tools, LogPath: filepath.Join(logDir, "cert-manager.log")}
	logf, err := os.OpenFile(cm.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := localcluster.InClusterCommand(context.Background(), c.State, tools.Controller,
		"--kubeconfig="+c.State.InnerKubeconfig, "--cluster-resource-namespace=kube-system", "--v=2")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	cm.cmd, cm.exited = cmd, make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(cm.exited) }()
	return cm, nil
}

// Running reports whether the controller process is still alive.
func (cm *CertManager) Running() bool {
	cm.mu.Lock()
	defer cm.mu.Unlock()
	if cm.cmd == nil {
		return false
	}
	select {
	case <-cm.exited:
		return false
	default:
		return true
	}
}

// Stop asks the controller to shut down (SIGTERM, then SIGKILL after 15 s). It returns an
// error when the controller had already exited on its own, i.e. it crashed during the test.
func (cm *CertManager) Stop() error {
	cm.mu.Lock()
	defer cm.mu.Unlock()
	if cm.cmd == nil {
		return nil
	}
	defer func() { cm.cmd = nil }()
	select {
	case <-cm.exited:
		return fmt.Errorf("controller exited before Stop (%s); log tail:\n%s", cm.cmd.ProcessState, cm.logTail(20))
	default:
	}
	_ = cm.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-cm.exited:
		return nil
	case <-time.After(15 * time.Second):
	}
	err := cm.cmd.Process.Signal(syscall.SIGKILL)
	<-cm.exited
	return errors.Join(errors.New("controller ignored SIGTERM for 15s; killed"), err)
}

// LogTail returns the last n lines of the controller's log, for failure messages.
func (cm *CertManager) LogTail(n int) string {
	cm.mu.Lock()
	defer cm.mu.Unlock()
	return cm.logTail(n)
}

func (cm *CertManager) logTail(n int) string {
	b, _ := os.ReadFile(cm.LogPath)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
