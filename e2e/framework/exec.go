package framework

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/cozystack/etcd-operator/e2e/localcluster"
)

// Exec runs cmd in a container through the API (pods/exec, served by the node agent)
// and returns stdout and stderr. A non-zero exit is an error (remotecommand's
// exitcode error, whose message carries the code).
func (c *Cluster) Exec(ctx context.Context, namespace, pod, container string, cmd ...string) (string, string, error) {
	req := c.Kube.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(pod).
		SubResource("exec").VersionedParams(&corev1.PodExecOptions{
		Container: container, Command: cmd, Stdout: true, Stderr: true,
	}, scheme.ParameterCodec)
	ws, err := remotecommand.NewWebSocketExecutor(c.Config, "GET", req.URL().String())
	if err != nil {
		return "", "", err
	}
	spdy, err := remotecommand.NewSPDYExecutor(c.Config, http.MethodPost, req.URL())
	if err != nil {
		return "", "", err
	}
	executor, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool { return true })
	if err != nil {
		return "", "", err
	}
	var stdout, stderr bytes.Buffer
	err = executor.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr})
	return stdout.String(), stderr.String(), err
}

// ExecNsenter runs cmd inside a container's mount, network, uts and ipc namespaces
// with nsenter, bypassing the API (for when the node agent is stopped or its exec
// is under test).
func (c *Cluster) ExecNsenter(ctx context.Context, namespace, pod, container string, cmd ...string) (string, string, error) {
	pid, err := c.ContainerPID(ctx, namespace, pod, container)
	if err != nil {
		return "", "", err
	}
	args := append([]string{"-t", strconv.Itoa(pid), "-m", "-n", "-u", "-i", "--"}, cmd...)
	var stdout, stderr bytes.Buffer
	x := exec.CommandContext(ctx, "nsenter", args...)
	x.Stdout, x.Stderr = &stdout, &stderr
	if err := x.Run(); err != nil {
		return stdout.String(), stderr.String(), fmt.Errorf("nsenter %v: %w", cmd, err)
	}
	return stdout.String(), stderr.String(), nil
}

// InClusterCommand prepares a program to run inside the cluster network (cluster
// DNS, KUBECONFIG = in-cluster admin), e.g. the operator binary under test.
func (c *Cluster) InClusterCommand(ctx context.Context, name string, args ...string) *exec.Cmd {
	return localcluster.InClusterCommand(ctx, c.State, name, args...)
}

// Kubectl prepares the tools cache's kubectl against the cluster (the host kubeconfig), for
// tests that prove what users and other projects' suites do with it (kubectl debug, attach).
func (c *Cluster) Kubectl(ctx context.Context, args ...string) (*exec.Cmd, error) {
	kubectl, err := localcluster.ResolveKubectl(localcluster.Options{Name: c.Name})
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig", c.Kubeconfig}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.Kubeconfig)
	return cmd, nil
}

// IP runs iproute2's ip on the host and returns its stdout only (see Stdout).
func IP(ctx context.Context, args ...string) (string, error) {
	return Stdout(exec.CommandContext(ctx, "ip", args...))
}

// Stdout runs cmd and returns its stdout only, stderr going into the error. ip prints
// warnings on stderr while it exits 0 (for instance "Peer netns reference is invalid." while
// another test's netns file under /run/netns is between its creation and its bind mount):
// mixed into the output, they broke its parse in CI.
func Stdout(cmd *exec.Cmd) (string, error) {
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%v: %w: %s", cmd.Args, err, stderr.String())
	}
	return stdout.String(), nil
}
