package provider

import (
	"context"
	"io"
	"os"

	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"
)

// AttachToContainer serves `kubectl attach` and `kubectl debug -i/-it`, as a container runtime
// does: the client gets the container's output from now on, until the container exits or the
// client leaves, and what it sends goes to the container's stdin (spec.stdin; ignored without).
// The output is read from the container's log, which holds stdout and stderr together, so both
// reach the client's stdout stream; for a tty container it is the terminal's output.
func (p *Provider) AttachToContainer(ctx context.Context, namespace, pod, container string, attach api.AttachIO) error {
	ref, err := p.container(namespace, pod, container)
	if err != nil {
		return err
	}
	if ref.handle == nil {
		return errdefs.InvalidInputf("container %q is not running", container)
	}
	log, err := os.Open(p.containerLogPath(namespace, pod, container))
	if err != nil {
		return err
	}
	defer log.Close()
	// From the end, as a runtime's attach: earlier output is what `kubectl logs` shows (kubectl
	// says "If you don't see a command prompt, try pressing enter" for a shell's missed prompt).
	// Taken before stdin is connected, so nothing the input causes can be missed.
	if _, err := log.Seek(0, io.SeekEnd); err != nil {
		return err
	}
	if sizes := attach.Resize(); sizes != nil {
		go applyResizes(ref.stdio, sizes)
	}
	if in := attach.Stdin(); in != nil && ref.stdio != nil {
		if err := forwardInput(ctx, ref.stdio, in); err != nil {
			return errdefs.InvalidInput(err.Error())
		}
	}
	out := attach.Stdout()
	if out == nil {
		out = attach.Stderr()
	}
	if out == nil {
		select {
		case <-ref.outputDone():
		case <-ctx.Done():
		}
		return nil
	}
	_, err = io.Copy(out, &followReader{ctx: ctx, f: log, done: ref.outputDone(), every: attachPollInterval})
	return err
}

// forwardInput copies the client's input to the container's stdin until the input ends (which
// closes a stdinOnce stdin) or the attach does.
func forwardInput(ctx context.Context, s *containerStdio, in io.Reader) error {
	w, err := s.input()
	if err != nil {
		return err
	}
	go func() {
		stop := context.AfterFunc(ctx, func() { w.Close() }) // ends a write the container does not read
		defer stop()
		_, _ = io.Copy(w, in)
		w.Close()
		s.inputEnded()
	}()
	return nil
}

// applyResizes sets the client's terminal size on a tty container's terminal; other containers'
// resizes are only drained, so that virtual-kubelet's sender never blocks.
func applyResizes(s *containerStdio, sizes <-chan api.TermSize) {
	if s == nil || s.master == nil {
		for range sizes {
		}
		return
	}
	forwardResizes(s.master, sizes)
}
