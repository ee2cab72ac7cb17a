package provider

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestTerminationMessage(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "msg")
	logs := func(s string) func() ([]byte, error) { return func() ([]byte, error) { return []byte(s), nil } }
	readFile := corev1.Container{TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile}
	fallback := readFile
	fallback.TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
	long := strings.Repeat("x", maxTerminationMessage) + "END"
	cases := []struct {
		name     string
		c        corev1.Container
		content  *string // nil: no file
		exitCode int
		logs     string
		want     string
	}{
		{name: "file content", c: readFile, content: ptrTo(`{"ok":true}`), want: `{"ok":true}`},
		{name: "the end of a long file", c: readFile, content: &long, want: long[len(long)-maxTerminationMessage:]},
		{name: "empty file, File policy", c: readFile, content: ptrTo(""), exitCode: 1, logs: "boom\n", want: ""},
		{name: "empty file, fallback, success", c: fallback, content: ptrTo(""), exitCode: 0, logs: "fine\n", want: ""},
		{name: "empty file, fallback, failure", c: fallback, content: ptrTo(""), exitCode: 2, logs: "a\nboom\n", want: "a\nboom\n"},
		{name: "file wins over logs", c: fallback, content: ptrTo("why"), exitCode: 2, logs: "boom\n", want: "why"},
		{name: "no file, fallback, failure", c: fallback, exitCode: 137, logs: "killed\n", want: "killed\n"},
		{name: "no path, fallback, failure", c: corev1.Container{TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError},
			exitCode: 1, logs: "x\n", want: "x\n"},
		{name: "no path, File policy", c: corev1.Container{}, exitCode: 1, logs: "x\n", want: ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_ = os.Remove(file)
			if tc.content != nil {
				writeFile(t, file, *tc.content)
			}
			if got := terminationMessage(&tc.c, file, tc.exitCode, logs(tc.logs)); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
	t.Run("unreadable file", func(t *testing.T) {
		if got := terminationMessage(&readFile, dir, 0, logs("")); !strings.HasPrefix(got, "Error on reading termination log "+dir) {
			t.Fatalf("a directory as the file gave %q", got)
		}
	})
}

func ptrTo(s string) *string { return &s }

func TestLogMessageLimits(t *testing.T) {
	var b strings.Builder
	for i := 1; i <= 100; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	got := string(logMessage([]byte(b.String())))
	if !strings.HasPrefix(got, "line 21\n") || !strings.HasSuffix(got, "line 100\n") || strings.Count(got, "\n") != maxLogMessageLines {
		t.Fatalf("want the last 80 lines, got %q", got)
	}
	wide := strings.Repeat(strings.Repeat("y", 99)+"\n", 30) // 3000 bytes in 30 lines
	if got := logMessage([]byte(wide)); len(got) != maxLogMessageBytes || string(got) != wide[len(wide)-maxLogMessageBytes:] {
		t.Fatalf("want the last %d bytes, got %d", maxLogMessageBytes, len(got))
	}
}

func TestLogTailSinceStopsAtTheRunsStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.log")
	previous := "previous run\n"
	writeFile(t, path, previous+"current run\n")
	got, err := logTailSince(path, int64(len(previous)))
	if err != nil || string(got) != "current run\n" {
		t.Fatalf("got %q, %v", got, err)
	}
	big := strings.Repeat("z", 3*maxLogMessageBytes)
	writeFile(t, path, big)
	if got, _ := logTailSince(path, 0); len(got) != maxLogMessageBytes {
		t.Fatalf("read %d bytes of a long log, want the last %d", len(got), maxLogMessageBytes)
	}
}

func TestFreshTerminationFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "termination", "c")
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	uid, gid := os.Getuid(), os.Getgid()
	if err := freshTerminationFile(path, uid, gid); err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, "first run")
	// A process of the earlier run that still has the file open must not write this run's message.
	earlier, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer earlier.Close()
	if err := freshTerminationFile(path, uid, gid); err != nil {
		t.Fatal(err)
	}
	if _, err := earlier.WriteString("late write"); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() != 0 || st.Mode().Perm() != 0o666 {
		t.Fatalf("want an empty 0666 file, got size %d mode %v", st.Size(), st.Mode().Perm())
	}
	if sys := st.Sys().(*syscall.Stat_t); int(sys.Uid) != uid || int(sys.Gid) != gid {
		t.Fatalf("owner %d:%d, want %d:%d", sys.Uid, sys.Gid, uid, gid)
	}
}

func TestStatusLimitsMessagesPerPod(t *testing.T) {
	now := time.Now()
	big := terminated(1, now, now)
	big.Terminated.Message = strings.Repeat("m", 5000)
	v := podView{Phase: corev1.PodFailed,
		InitContainers:      []containerView{{Name: "i", State: big}},
		Containers:          []containerView{{Name: "c", State: big, LastState: big}},
		EphemeralContainers: []containerView{{Name: "e", State: big, Ephemeral: true}},
	}
	st := buildStatus(v, conditionClock{}, now)
	share := maxPodTerminationMessages / 3
	for _, m := range []string{st.InitContainerStatuses[0].State.Terminated.Message, st.ContainerStatuses[0].State.Terminated.Message,
		st.ContainerStatuses[0].LastTerminationState.Terminated.Message, st.EphemeralContainerStatuses[0].State.Terminated.Message} {
		if len(m) != share {
			t.Fatalf("message of %d bytes, want the per-container share %d", len(m), share)
		}
	}
	if len(big.Terminated.Message) != 5000 {
		t.Fatal("cutting the reported message changed the container's own record")
	}
}
