package agent

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Only the etcd serving as the named member is picked, by its exact --name flag: not another
// member's etcd, not a process that merely mentions the name.
func TestEtcdPidsAndStop(t *testing.T) {
	proc := t.TempDir()
	for pid, argv := range map[string][]string{
		"1":    {"/usr/local/bin/etcd", "--name=etcd-abcde", "--data-dir=/var/lib/etcd"},
		"7":    {"etcd", "--name=etcd-abcdef"},
		"9":    {"/bin/sh", "-c", "etcd --name=etcd-abcde"},
		"12":   {"/manager", "stop-etcd", "etcd-abcde"},
		"self": {"etcd", "--name=etcd-abcde"}, // not a pid
	} {
		if err := os.MkdirAll(filepath.Join(proc, pid), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(proc, pid, "cmdline"), []byte(strings.Join(argv, "\x00")+"\x00"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(proc, "33"), 0o755); err != nil { // exited: no cmdline
		t.Fatal(err)
	}
	pids, err := etcdPids(proc, "etcd-abcde")
	if err != nil || !slices.Equal(pids, []int{1}) {
		t.Fatalf("etcdPids = %v, %v; want [1]", pids, err)
	}
	var stderr bytes.Buffer
	if code := StopEtcdCommand([]string{"etcd-nobody"}, proc, &stderr); code != 1 || !strings.Contains(stderr.String(), "no etcd process") {
		t.Errorf("no such member: exit %d, %q", code, stderr.String())
	}
	if code := StopEtcdCommand(nil, proc, &stderr); code != 2 {
		t.Errorf("no member named: exit %d, want 2", code)
	}
}
