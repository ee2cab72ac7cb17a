package agent

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/cozystack/etcd-operator/operator/internal/snapshot"
)

// StopEtcdCommand is `manager stop-etcd <member>`, an ephemeral container targeting a tmpfs
// member's etcd container (so it sees etcd's processes): it sends SIGTERM to the etcd serving as
// that member. The kubelet restarts the container in the same Pod, on the same memory volume,
// and etcd reads ETCD_FORCE_NEW_CLUSTER from the Pod's annotation again: a quorum-loss rebuild
// without losing the survivor's data.
func StopEtcdCommand(args []string, procDir string, stderr io.Writer) int {
	if len(args) != 1 || args[0] == "" {
		fmt.Fprintf(stderr, "usage: manager %s <member>\n", snapshot.CommandStopEtcd)
		return 2
	}
	pids, err := etcdPids(procDir, args[0])
	if err == nil && len(pids) == 0 {
		err = fmt.Errorf("no etcd process serves member %s here (is the container's target etcd?)", args[0])
	}
	for i := 0; err == nil && i < len(pids); i++ {
		err = syscall.Kill(pids[i], syscall.SIGTERM)
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", snapshot.CommandStopEtcd, err)
		return 1
	}
	fmt.Fprintf(stderr, "sent SIGTERM to etcd %v of member %s\n", pids, args[0])
	return 0
}

// etcdPids are the processes under procDir (/proc) running etcd with --name=<member>.
func etcdPids(procDir, member string) ([]int, error) {
	entries, err := os.ReadDir(procDir)
	if err != nil {
		return nil, err
	}
	want := []byte("--name=" + member)
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join(procDir, e.Name(), "cmdline"))
		if err != nil { // gone meanwhile, or not ours to read
			continue
		}
		argv := bytes.Split(bytes.TrimRight(cmdline, "\x00"), []byte{0})
		if len(argv) > 1 && filepath.Base(string(argv[0])) == "etcd" && containsArg(argv[1:], want) {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

func containsArg(args [][]byte, want []byte) bool {
	for _, a := range args {
		if bytes.Equal(a, want) {
			return true
		}
	}
	return false
}
