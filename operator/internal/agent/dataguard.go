package agent

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/snapshot"
)

// GuardDataDirCommand is `manager guard-data-dir <data-dir>`, a tmpfs member's first init
// container. Once the member has voted (snapshot.EnvDataExpected is "true") its data dir must
// hold etcd's write-ahead log; an empty one means the memory volume was lost under the Pod (its
// node rebooted), and etcd started on it would rejoin under the old member ID and vote without
// the writes it acknowledged. It then exits v1alpha2.DataGuardRefusedExitCode, saying why in
// the termination log; the kubelet keeps retrying it and etcd never starts, while the operator
// replaces the member (or applies spec.quorumLoss when a majority is gone).
func GuardDataDirCommand(args []string, getenv func(string) string, stderr io.Writer) int {
	if len(args) != 1 || args[0] == "" {
		fmt.Fprintf(stderr, "usage: manager %s <data-dir>\n", snapshot.CommandGuardDataDir)
		return 2
	}
	if getenv(snapshot.EnvDataExpected) != "true" {
		return 0
	}
	has, err := hasEtcdData(args[0])
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", snapshot.CommandGuardDataDir, err)
		return 1
	}
	if has {
		return 0
	}
	msg := fmt.Sprintf("data dir %s holds no etcd data, but this member has been a voter: its memory volume was lost "+
		"(did the node reboot?); etcd is not started, so it cannot rejoin and vote without the writes it acknowledged", args[0])
	fmt.Fprintln(stderr, msg)
	path := getenv(snapshot.EnvTerminationLog)
	if path == "" {
		path = snapshot.DefaultTerminationLog
	}
	_ = os.WriteFile(path, []byte(msg), 0o644) // best effort: stderr says it too
	return v1alpha2.DataGuardRefusedExitCode
}

// hasEtcdData: dir holds a write-ahead log segment (member/wal/*.wal), which is what etcd itself
// looks for to decide it has data to start from.
func hasEtcdData(dir string) (bool, error) {
	entries, err := os.ReadDir(filepath.Join(dir, memberDir, "wal"))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".wal") {
			return true, nil
		}
	}
	return false, nil
}
