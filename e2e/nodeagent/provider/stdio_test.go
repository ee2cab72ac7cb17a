package provider

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// stdinState reads the container's side of a FIFO without blocking: its data, whether the
// stdin ended (EOF: no writer left) or is open with nothing to read (EAGAIN).
func stdinState(t *testing.T, r *os.File) (data string, ended bool) {
	t.Helper()
	fd := int(r.Fd())
	if err := syscall.SetNonblock(fd, true); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.SetNonblock(fd, false) }()
	buf := make([]byte, 256)
	n, err := syscall.Read(fd, buf)
	switch {
	case errors.Is(err, syscall.EAGAIN):
		return "", false
	case err != nil:
		t.Fatal(err)
	}
	return string(buf[:n]), n == 0
}

func attachOnce(t *testing.T, s *containerStdio, input string) {
	t.Helper()
	w, err := s.input()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(w, input); err != nil {
		t.Fatal(err)
	}
	w.Close()
	s.inputEnded()
}

func TestStdinStaysOpenAcrossAttaches(t *testing.T) {
	dir := t.TempDir()
	s, files, err := openStdio(&corev1.Container{Stdin: true}, stdinFIFO(dir, "c"), filepath.Join(dir, "c.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer files.close()
	attachOnce(t, s, "first\n")
	if data, ended := stdinState(t, files.stdin); data != "first\n" || ended {
		t.Fatalf("after the first attach: %q ended=%v", data, ended)
	}
	if _, ended := stdinState(t, files.stdin); ended {
		t.Fatal("stdin ended when the attach detached; without stdinOnce it stays open")
	}
	attachOnce(t, s, "second\n")
	if data, _ := stdinState(t, files.stdin); data != "second\n" {
		t.Fatalf("a second attach delivered %q", data)
	}
	s.exited()
	if _, err := os.Stat(stdinFIFO(dir, "c")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the FIFO outlived the container: %v", err)
	}
}

func TestStdinOnceEndsWithTheFirstAttach(t *testing.T) {
	dir := t.TempDir()
	s, files, err := openStdio(&corev1.Container{Stdin: true, StdinOnce: true}, stdinFIFO(dir, "c"), filepath.Join(dir, "c.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer files.close()
	defer s.exited()
	if _, ended := stdinState(t, files.stdin); ended {
		t.Fatal("stdin ended before any attach")
	}
	attachOnce(t, s, "only\n")
	if data, _ := stdinState(t, files.stdin); data != "only\n" {
		t.Fatalf("got %q", data)
	}
	if _, ended := stdinState(t, files.stdin); !ended {
		t.Fatal("stdinOnce: stdin did not end with the first attach")
	}
}

func TestTerminalOutputReachesTheLog(t *testing.T) {
	dir := t.TempDir()
	logPath := filepath.Join(dir, "c.log")
	s, files, err := openStdio(&corev1.Container{Stdin: true, TTY: true}, stdinFIFO(dir, "c"), logPath)
	if err != nil {
		t.Fatal(err)
	}
	s.copyOutput()
	w, err := s.input()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(w, "typed\n"); err != nil {
		t.Fatal(err)
	}
	line := make([]byte, 64)
	n, err := files.terminal.Read(line) // what the container reads from its terminal
	if err != nil || string(line[:n]) != "typed\n" {
		t.Fatalf("the container read %q, %v", line[:n], err)
	}
	if _, err := files.terminal.WriteString("output\n"); err != nil {
		t.Fatal(err)
	}
	files.close() // the container exits: its last holder of the terminal is gone
	s.exited()
	<-s.drained
	log, _ := os.ReadFile(logPath)
	// The terminal echoes the input and turns \n into \r\n, as a real one does.
	if !bytes.Contains(log, []byte("output\r\n")) || !strings.Contains(string(log), "typed") {
		t.Fatalf("log %q", log)
	}
}

func TestAdoptedStdio(t *testing.T) {
	dir := t.TempDir()
	if s := adoptStdio(&corev1.Container{Stdin: true, TTY: true}, stdinFIFO(dir, "c")); s == nil || !s.lost {
		t.Fatal("a re-adopted tty container must report its terminal lost")
	} else if _, err := s.input(); err == nil || !strings.Contains(err.Error(), "lost") {
		t.Fatalf("input of a lost terminal: %v", err)
	}
	if adoptStdio(&corev1.Container{}, stdinFIFO(dir, "c")) != nil {
		t.Fatal("a container without stdin has no stdio")
	}
	if err := syscall.Mkfifo(stdinFIFO(dir, "c"), 0o600); err != nil {
		t.Fatal(err)
	}
	if s := adoptStdio(&corev1.Container{Stdin: true}, stdinFIFO(dir, "c")); s == nil || s.fifo == "" {
		t.Fatal("the FIFO of a re-adopted container is usable again")
	}
}
