package provider

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
)

// The kubelet's limits (pkg/kubelet/container/runtime.go), so that a termination message that
// fits on a real node fits here, and one that is cut there is cut here the same way.
const (
	// maxTerminationMessage is how much of the end of the termination message file is read.
	maxTerminationMessage = 4 * 1024
	// maxLogMessageLines and maxLogMessageBytes bound the log tail used by FallbackToLogsOnError.
	maxLogMessageLines = 80
	maxLogMessageBytes = 2 * 1024
	// maxPodTerminationMessages is shared by all containers of a pod in the reported status.
	maxPodTerminationMessages = 12 * 1024
)

// terminationFile is the host file behind a container's terminationMessagePath.
func terminationFile(podDir, container string) string {
	return filepath.Join(podDir, "termination", container)
}

// freshTerminationFile gives a container start its own empty termination message file, as the
// kubelet does per container instance: mode 0666 (whatever the umask), and owned by the
// container's user, so that a non-root container can also open it with O_CREAT where
// fs.protected_regular would refuse a root-owned file (a path below a sticky /tmp).
func freshTerminationFile(path string, uid, gid int) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	// Removed, not truncated: a process of an earlier run that still has it open writes into
	// the old file, not into this run's message.
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o666)
	if err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Chmod(path, 0o666); err != nil {
		return err
	}
	return os.Lchown(path, uid, gid)
}

// terminationMessage is what the kubelet reports as state.terminated.message of a container that
// exited with exitCode: the end of its termination message file, or with FallbackToLogsOnError,
// when that is empty and the container failed, the tail of this run's log (logTail).
func terminationMessage(c *corev1.Container, file string, exitCode int, logTail func() ([]byte, error)) string {
	fallback := c.TerminationMessagePolicy == corev1.TerminationMessageFallbackToLogsOnError && exitCode != 0
	if c.TerminationMessagePath != "" {
		data, err := readTail(file, maxTerminationMessage)
		switch {
		case err != nil && !errors.Is(err, os.ErrNotExist):
			return fmt.Sprintf("Error on reading termination log %s: %v", file, err)
		case len(data) > 0 || !fallback:
			return string(data)
		}
	}
	if !fallback {
		return ""
	}
	data, err := logTail()
	if err != nil {
		return fmt.Sprintf("Error on reading termination message from logs: %v", err)
	}
	return string(logMessage(data))
}

// logMessage is the kubelet's fallback message: the last maxLogMessageLines lines, of which at
// most the last maxLogMessageBytes bytes.
func logMessage(tail []byte) []byte {
	tail = tail[TailStart(tail, maxLogMessageLines):]
	if len(tail) > maxLogMessageBytes {
		tail = tail[len(tail)-maxLogMessageBytes:]
	}
	return tail
}

// readTail reads the last limit bytes of path.
func readTail(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	return readRange(f, max(0, st.Size()-limit), st.Size())
}

// logTailSince reads up to maxLogMessageBytes from the end of the log, but nothing before start
// (the beginning of the current run). The last lines' start is found inside that window: the
// message is at most maxLogMessageBytes long, so nothing before it can matter.
func logTailSince(path string, start int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	return readRange(f, max(start, st.Size()-maxLogMessageBytes), st.Size())
}

func readRange(f *os.File, from, to int64) ([]byte, error) {
	if to <= from {
		return nil, nil
	}
	data := make([]byte, to-from)
	n, err := f.ReadAt(data, from)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return data[:n], nil
}

// limitMessages cuts the termination messages of a pod's statuses to the kubelet's per-container
// share of maxPodTerminationMessages (its status manager keeps the beginning of each).
func limitMessages(st *corev1.PodStatus) {
	lists := [][]corev1.ContainerStatus{st.InitContainerStatuses, st.ContainerStatuses, st.EphemeralContainerStatuses}
	count := 0
	for _, l := range lists {
		count += len(l)
	}
	if count == 0 {
		return
	}
	share := maxPodTerminationMessages / count
	for _, l := range lists {
		for i := range l {
			for _, s := range []*corev1.ContainerState{&l[i].State, &l[i].LastTerminationState} {
				if t := s.Terminated; t != nil && len(t.Message) > share {
					t.Message = t.Message[:share]
				}
			}
		}
	}
}
