package provider

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/cozystack/etcd-operator/e2e/nodeagent/process"
)

// ttyDrainTimeout bounds how long an exited tty container's last output may take to reach the
// log: a child that left the container's process group could hold the terminal open forever.
const ttyDrainTimeout = 2 * time.Second

// containerStdio is the standard input of a container whose spec asks for one, kept the way a
// container runtime keeps it, so that `kubectl attach` can reach it:
//   - tty: a pseudo-terminal; the agent holds the master and copies its output to the log.
//   - stdin without tty: a FIFO in the pod folder. Without stdinOnce the container holds it
//     read-write itself, so its stdin never ends and survives an agent restart; attaches open it
//     for writing. With stdinOnce the agent holds the only writer until the first attach ends.
type containerStdio struct {
	tty     bool
	lost    bool          // tty of a re-adopted container: the master died with the previous agent
	master  *os.File      // tty only
	log     *os.File      // tty only: where the master's output goes
	drained chan struct{} // tty only: closed when the output copy ended
	fifo    string        // stdin without tty

	mu   sync.Mutex
	once *os.File // stdinOnce: the agent's writer, closed when the first attach's input ends
}

// stdioFiles are the container's side of its stdio, closed by the agent once it started.
type stdioFiles struct{ stdin, terminal *os.File }

func (f stdioFiles) close() {
	for _, file := range []*os.File{f.stdin, f.terminal} {
		if file != nil {
			file.Close()
		}
	}
}

// stdinFIFO is where a container's stdin FIFO lives.
func stdinFIFO(podDir, container string) string { return filepath.Join(podDir, container+".stdin") }

// openStdio prepares a container's stdin or terminal; (nil, zero, nil) when it has neither.
func openStdio(c *corev1.Container, fifo, logPath string) (*containerStdio, stdioFiles, error) {
	switch {
	case c.TTY:
		return openTerminal(logPath)
	case c.Stdin:
		return openFIFO(fifo, c.StdinOnce)
	}
	return nil, stdioFiles{}, nil
}

func openTerminal(logPath string) (*containerStdio, stdioFiles, error) {
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		return nil, stdioFiles{}, err
	}
	master, slave, err := process.OpenPTY()
	if err != nil {
		log.Close()
		return nil, stdioFiles{}, err
	}
	s := &containerStdio{tty: true, master: master, log: log, drained: make(chan struct{})}
	return s, stdioFiles{terminal: slave}, nil
}

func openFIFO(path string, once bool) (*containerStdio, stdioFiles, error) {
	_ = os.Remove(path) // a FIFO of an earlier run may still hold unread input
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		return nil, stdioFiles{}, fmt.Errorf("stdin fifo: %w", err)
	}
	s := &containerStdio{fifo: path}
	if !once {
		// Opening a FIFO read-write never blocks on Linux, and a container holding a writer
		// itself never reads EOF: the kubelet's stdin without stdinOnce stays open for good.
		f, err := openBlocking(path, syscall.O_RDWR)
		return s, stdioFiles{stdin: f}, err
	}
	w, err := openBlocking(path, syscall.O_RDWR) // a writer first, so the read-only open does not block
	if err != nil {
		return nil, stdioFiles{}, err
	}
	r, err := openBlocking(path, syscall.O_RDONLY|syscall.O_NONBLOCK)
	if err != nil {
		w.Close()
		return nil, stdioFiles{}, err
	}
	s.once = w
	return s, stdioFiles{stdin: r}, nil
}

// openBlocking opens path and clears O_NONBLOCK: the file description is shared with the
// container, whose reads must block.
func openBlocking(path string, flags int) (*os.File, error) {
	fd, err := syscall.Open(path, flags|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	if err := syscall.SetNonblock(fd, false); err != nil {
		syscall.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), path), nil
}

// adoptStdio is what a restarted agent still has of a re-adopted container's stdio: the FIFO,
// which it can open again; a terminal's master died with the previous agent.
func adoptStdio(c *corev1.Container, fifo string) *containerStdio {
	if c.TTY {
		return &containerStdio{tty: true, lost: true}
	}
	if !c.Stdin {
		return nil
	}
	if _, err := os.Stat(fifo); err != nil {
		return nil
	}
	return &containerStdio{fifo: fifo}
}

// copyOutput copies a started tty container's output to its log until the terminal closes.
func (s *containerStdio) copyOutput() {
	if s == nil || s.master == nil {
		return
	}
	go func() {
		defer close(s.drained)
		defer s.log.Close()
		// Ends with EIO once the container's last holder of the terminal is gone.
		_, _ = io.Copy(s.log, s.master)
	}()
}

// abort releases the agent's side of a container that did not start.
func (s *containerStdio) abort() {
	if s == nil {
		return
	}
	for _, f := range []*os.File{s.master, s.log, s.once} {
		if f != nil {
			f.Close()
		}
	}
	if s.fifo != "" {
		_ = os.Remove(s.fifo)
	}
}

// outputDone is closed once all of the container's output is in the log: at its exit, or for a
// tty when the terminal's output has been copied as well.
func (s *containerStdio) outputDone(exited <-chan struct{}) <-chan struct{} {
	if s == nil || s.drained == nil {
		return exited
	}
	return s.drained
}

// input opens the container's stdin for one attach.
func (s *containerStdio) input() (io.WriteCloser, error) {
	switch {
	case s == nil:
		return nil, errors.New("the container has no stdin (spec.stdin is false)")
	case s.lost:
		return nil, errors.New("the container's terminal was lost when the node agent restarted")
	case s.tty:
		return nopWriteCloser{s.master}, nil // the terminal stays open for the next attach
	}
	// O_NONBLOCK makes the open fail (ENXIO) instead of hanging when the container is gone, and
	// keeps this writer (its own file description) pollable: closing it ends a blocked write.
	fd, err := syscall.Open(s.fifo, syscall.O_WRONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("stdin of the container: %w", err)
	}
	return os.NewFile(uintptr(fd), s.fifo), nil
}

// inputEnded is called when an attach's input ends: with stdinOnce the container's stdin closes.
func (s *containerStdio) inputEnded() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.once != nil {
		s.once.Close()
		s.once = nil
	}
}

// exited releases the agent's side once the container exited.
func (s *containerStdio) exited() {
	if s == nil {
		return
	}
	if s.master != nil {
		select {
		case <-s.drained:
		case <-time.After(ttyDrainTimeout):
		}
		s.master.Close()
	}
	s.inputEnded()
	if s.fifo != "" {
		_ = os.Remove(s.fifo)
	}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
