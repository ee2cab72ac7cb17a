package provider

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"

	"github.com/cozystack/etcd-operator/e2e/nodeagent/probes"
	"github.com/cozystack/etcd-operator/e2e/nodeagent/process"
)

// containerRef is a snapshot of what streaming needs from one container.
type containerRef struct {
	handle                 *process.Handle
	target                 probes.Target
	logStart, prevLogStart int64
	stdio                  *containerStdio
}

// outputDone is closed once the running container's output is all in its log (nil handle: none).
func (r containerRef) outputDone() <-chan struct{} {
	if r.handle == nil {
		return nil
	}
	return r.stdio.outputDone(r.handle.Done())
}

func (p *Provider) container(namespace, pod, name string) (containerRef, error) {
	rt := p.lookup(namespace, pod)
	if rt == nil {
		return containerRef{}, errdefs.NotFoundf("pod %s/%s is not on this node", namespace, pod)
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if c := rt.findLocked(name); c != nil {
		return containerRef{handle: c.handle, target: c.target, logStart: c.logStart, prevLogStart: c.prevLogStart, stdio: c.stdio}, nil
	}
	return containerRef{}, errdefs.NotFoundf("pod %s/%s has no container %q", namespace, pod, name)
}

// GetContainerLogs serves `kubectl logs` from the container's log file: the bytes written since its
// current start (or the previous run's with --previous), with tail, limit and follow.
func (p *Provider) GetContainerLogs(ctx context.Context, namespace, pod, container string, opts api.ContainerLogOpts) (io.ReadCloser, error) {
	ref, err := p.container(namespace, pod, container)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p.containerLogPath(namespace, pod, container))
	if err != nil {
		return nil, errdefs.NotFoundf("no logs for container %q: %v", container, err)
	}
	start, end := ref.logStart, int64(-1)
	if opts.Previous {
		start, end = ref.prevLogStart, ref.logStart
	}
	if opts.Tail > 0 {
		if start, err = tailOffset(f, start, end, opts.Tail); err != nil {
			f.Close()
			return nil, err
		}
	}
	if _, err := f.Seek(start, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	var r io.Reader = f
	switch {
	case end >= 0:
		r = io.LimitReader(f, end-start)
	case opts.Follow && ref.handle != nil:
		r = &followReader{ctx: ctx, f: f, done: ref.outputDone(), every: logPollInterval}
	}
	if opts.LimitBytes > 0 {
		r = io.LimitReader(r, int64(opts.LimitBytes))
	}
	return readCloser{Reader: r, Closer: f}, nil
}

type readCloser struct {
	io.Reader
	io.Closer
}

// tailOffset finds where the last n lines of f[start:end) begin (end < 0: end of file).
func tailOffset(f *os.File, start, end int64, n int) (int64, error) {
	if end < 0 {
		st, err := f.Stat()
		if err != nil {
			return 0, err
		}
		end = st.Size()
	}
	data := make([]byte, end-start)
	if _, err := f.ReadAt(data, start); err != nil && err != io.EOF {
		return 0, err
	}
	return start + int64(TailStart(data, n)), nil
}

// TailStart is the index where the last n lines of data begin.
func TailStart(data []byte, n int) int {
	i := len(data)
	if i > 0 && data[i-1] == '\n' {
		i--
	}
	for ; n > 0; n-- {
		j := bytes.LastIndexByte(data[:i], '\n')
		if j < 0 {
			return 0
		}
		i = j
		if n == 1 {
			return j + 1
		}
	}
	return i + 1
}

// logPollInterval paces `kubectl logs -f`; attachPollInterval the output of an attach, where a
// person waits for the echo of what they type.
const (
	logPollInterval    = 200 * time.Millisecond
	attachPollInterval = 25 * time.Millisecond
)

// followReader keeps reading a growing log file until the container exits or the client leaves.
type followReader struct {
	ctx   context.Context
	f     *os.File
	done  <-chan struct{}
	every time.Duration
}

func (r *followReader) Read(b []byte) (int, error) {
	for {
		n, err := r.f.Read(b)
		if n > 0 || (err != nil && err != io.EOF) {
			return n, err
		}
		select {
		case <-r.ctx.Done():
			return 0, io.EOF
		case <-r.done:
			return r.f.Read(b) // drain what the exiting process wrote last
		case <-time.After(r.every):
		}
	}
}

// RunInContainer serves `kubectl exec`: the command runs in the container's mount, network and
// UTS namespaces, as the container's user, with its environment.
func (p *Provider) RunInContainer(ctx context.Context, namespace, pod, container string, cmd []string, attach api.AttachIO) error {
	ref, err := p.container(namespace, pod, container)
	if err != nil {
		return err
	}
	if ref.handle == nil {
		return errdefs.InvalidInputf("container %q is not running", container)
	}
	args := probes.NsenterArgs(ref.handle.PID, ref.target.UID, ref.target.GID, cmd)
	c := exec.CommandContext(ctx, "nsenter", args...)
	c.Env = ref.target.Env
	if attach.TTY() {
		return runWithPTY(c, attach)
	}
	if in := attach.Stdin(); in != nil {
		c.Stdin = in
	}
	c.Stdout, c.Stderr = attach.Stdout(), attach.Stderr()
	if c.Stdout == nil {
		c.Stdout = io.Discard
	}
	if c.Stderr == nil {
		c.Stderr = c.Stdout
	}
	err = c.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return fmt.Errorf("command terminated with exit code %d", ee.ExitCode())
	}
	return err
}

// PortForward connects the stream to the pod's port, dialled from the node (the pod IP is on the bridge).
func (p *Provider) PortForward(ctx context.Context, namespace, pod string, port int32, stream io.ReadWriteCloser) error {
	rt := p.lookup(namespace, pod)
	if rt == nil {
		return errdefs.NotFoundf("pod %s/%s is not on this node", namespace, pod)
	}
	rt.mu.Lock()
	ip := rt.podIP
	rt.mu.Unlock()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(ip, strconv.Itoa(int(port))))
	if err != nil {
		return err
	}
	defer conn.Close()
	defer stream.Close()
	errs := make(chan error, 2)
	go func() { _, err := io.Copy(conn, stream); errs <- err }()
	go func() { _, err := io.Copy(stream, conn); errs <- err }()
	select {
	case err = <-errs:
	case <-ctx.Done():
	}
	return err
}
