package localcluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Down stops cluster name (its supervisor first, so that it tears down in order),
// then removes whatever is left: processes in the cluster's netns, the netns, mounts
// under the state folder, and the folder. Safe on a cluster that is half gone.
func Down(root, name string) error {
	if err := requireRoot(); err != nil {
		return err
	}
	if root == "" {
		root = DefaultStateRoot
	}
	l := Layout{Dir: filepath.Join(root, name)}
	if pid := supervisorPID(l); pidAlive(pid) {
		_ = syscall.Kill(pid, syscall.SIGTERM)
		deadline := time.Now().Add(90 * time.Second)
		for pidAlive(pid) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if pidAlive(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	return cleanupLeftovers(name, l, true)
}

func supervisorPID(l Layout) int {
	b, err := os.ReadFile(l.LockFile())
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// cleanupLeftovers kills every process in the cluster's netns (pods included),
// deletes those netns, unmounts what is mounted below the folder and removes it.
func cleanupLeftovers(name string, l Layout, removeDir bool) error {
	var errs []error
	names := clusterNetnsNames(name)
	// Real nodes: containerd's shims and the kubelets are in the cluster netns, and every process
	// naming the cluster's folder is one of its own; containers are found by their cgroups.
	pids := append(pidsInNetns(names), pidsNaming(l.Dir+"/")...)
	if err := killPids(pids, 10*time.Second); err != nil {
		errs = append(errs, err)
	}
	if err := killCgroups(clusterCgroupRoots(name), 10*time.Second); err != nil {
		errs = append(errs, err)
	}
	for _, ns := range names {
		if err := run(context.Background(), "ip", "netns", "del", ns); err != nil {
			errs = append(errs, err)
		}
	}
	for _, m := range mountsUnder(l.Dir) {
		if err := unix.Unmount(m, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
			errs = append(errs, fmt.Errorf("umount %s: %w", m, err))
		}
	}
	if removeDir {
		if err := os.RemoveAll(l.Dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// mountsUnder lists mount points below dir, deepest first.
func mountsUnder(dir string) []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMount(fields[4])
		if strings.HasPrefix(mp, dir+"/") || mp == dir {
			out = append(out, mp)
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// List returns the names of clusters with a state folder under root.
func List(root string) []string {
	if root == "" {
		root = DefaultStateRoot
	}
	entries, _ := os.ReadDir(root)
	var names []string
	for _, e := range entries {
		if e.IsDir() && nameRE.MatchString(e.Name()) {
			names = append(names, e.Name())
		}
	}
	return names
}

// pidsNaming lists the processes (but this one) whose command line contains s.
func pidsNaming(s string) []int {
	procs, _ := os.ReadDir("/proc")
	var pids []int
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), s) {
			pids = append(pids, pid)
		}
	}
	return pids
}
