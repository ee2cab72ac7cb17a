package probes

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Target is where a probe is run: the pod's address and the container's process.
type Target struct {
	PodIP string
	PID   int      // container process, for exec probes (nsenter)
	Env   []string // container environment incl. PATH, for exec probes
	UID   int      // -1 = root
	GID   int
	Ports []corev1.ContainerPort // to resolve named ports
}

// Run executes one probe attempt within the probe's timeout; nil means success.
func Run(ctx context.Context, p *corev1.Probe, t Target) error {
	ctx, cancel := context.WithTimeout(ctx, SettingsOf(p).Timeout)
	defer cancel()
	switch {
	case p.HTTPGet != nil:
		return httpGet(ctx, p.HTTPGet, t)
	case p.TCPSocket != nil:
		port, err := resolvePort(p.TCPSocket.Port, t.Ports)
		if err != nil {
			return err
		}
		host := p.TCPSocket.Host
		if host == "" {
			host = t.PodIP
		}
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			return err
		}
		return conn.Close()
	case p.Exec != nil:
		return execProbe(ctx, p.Exec.Command, t)
	case p.GRPC != nil:
		return fmt.Errorf("grpc probes are not supported by the local node agent")
	}
	return fmt.Errorf("probe has no handler")
}

func httpGet(ctx context.Context, g *corev1.HTTPGetAction, t Target) error {
	port, err := resolvePort(g.Port, t.Ports)
	if err != nil {
		return err
	}
	host := g.Host
	if host == "" {
		host = t.PodIP
	}
	scheme := strings.ToLower(string(g.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	path := g.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet,
		fmt.Sprintf("%s://%s%s", scheme, net.JoinHostPort(host, strconv.Itoa(port)), path), nil)
	if err != nil {
		return err
	}
	for _, h := range g.HTTPHeaders {
		req.Header.Add(h.Name, h.Value)
	}
	client := &http.Client{
		// Like the kubelet: HTTPS probes do not verify the certificate.
		Transport:     &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableKeepAlives: true}, //nolint:gosec
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 10<<10))
	if resp.StatusCode < 200 || resp.StatusCode >= 400 {
		return fmt.Errorf("HTTP probe failed with statuscode: %d", resp.StatusCode)
	}
	return nil
}

// resolvePort turns a numeric or named port into a number.
func resolvePort(port intstr.IntOrString, ports []corev1.ContainerPort) (int, error) {
	if port.Type == intstr.Int {
		return port.IntValue(), nil
	}
	for _, p := range ports {
		if p.Name == port.StrVal {
			return int(p.ContainerPort), nil
		}
	}
	if n, err := strconv.Atoi(port.StrVal); err == nil {
		return n, nil
	}
	return 0, fmt.Errorf("named port %q not found", port.StrVal)
}

// execProbe runs the command inside the container's mount and network namespaces.
func execProbe(ctx context.Context, command []string, t Target) error {
	if t.PID <= 0 {
		return fmt.Errorf("container is not running")
	}
	cmd := exec.CommandContext(ctx, "nsenter", NsenterArgs(t.PID, t.UID, t.GID, command)...)
	cmd.Env = t.Env
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("exec probe %q: %v: %s", strings.Join(command, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// NsenterArgs builds the nsenter arguments that run command in the mount, network and UTS namespaces of pid as uid/gid.
func NsenterArgs(pid, uid, gid int, command []string) []string {
	args := []string{"-t", strconv.Itoa(pid), "-m", "-n", "-u", "-w"}
	if uid >= 0 {
		args = append(args, "-S", strconv.Itoa(uid))
	}
	if gid >= 0 {
		args = append(args, "-G", strconv.Itoa(gid))
	}
	return append(append(args, "--"), command...)
}
