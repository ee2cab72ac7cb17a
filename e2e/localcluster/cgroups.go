package localcluster

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A real node's kubelet runs with the cgroupfs driver below a cgroupRoot of its own,
// /lc-<cluster>-node-<i>. On cgroup v1 the kubelet expects that folder in every hierarchy;
// cpuset's new folders start with empty cpus and mems, which must be copied from the parent
// before any process may join. Teardown kills whatever is left in those trees and removes them
// in every hierarchy.

// RealNodeCgroupRoot is the cgroupRoot of real node i of cluster (a path in every hierarchy).
func RealNodeCgroupRoot(cluster string, i int) string { return "/" + NodeName(cluster, i) }

// cgroupHierarchies lists the mount points of the machine's cgroup hierarchies (v1 and v2).
func cgroupHierarchies() ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseCgroupMounts(f)
}

// parseCgroupMounts reads a mountinfo and returns the mount points of cgroup and cgroup2.
func parseCgroupMounts(r io.Reader) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	s := bufio.NewScanner(r)
	for s.Scan() {
		// mount ID, parent, dev, root, mount point, options, optional fields..., "-", fstype, ...
		fields := strings.Fields(s.Text())
		sep := indexOf(fields, "-")
		if sep < 0 || sep+1 >= len(fields) || len(fields) < 5 {
			continue
		}
		if fs := fields[sep+1]; fs != "cgroup" && fs != "cgroup2" {
			continue
		}
		mp := unescapeMount(fields[4])
		if !seen[mp] {
			seen[mp] = true
			out = append(out, mp)
		}
	}
	return out, s.Err()
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// createCgroupRoot creates root in every hierarchy; in cpuset's, cpus and mems come from the parent.
func createCgroupRoot(root string) error {
	hs, err := cgroupHierarchies()
	if err != nil {
		return err
	}
	for _, h := range hs {
		dir := filepath.Join(h, root)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("cgroup %s: %w", dir, err)
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			if err := copyCgroupValue(filepath.Dir(dir), dir, f); err != nil {
				return err
			}
		}
	}
	return nil
}

// copyCgroupValue copies file from parent to dir when both have it and dir's is empty: v1's
// cpuset. On v2 the root has no cpuset.cpus and an empty one below means "the parent's".
func copyCgroupValue(parent, dir, file string) error {
	cur, err := os.ReadFile(filepath.Join(dir, file))
	if errors.Is(err, fs.ErrNotExist) || (err == nil && strings.TrimSpace(string(cur)) != "") {
		return nil
	}
	if err != nil {
		return err
	}
	v, err := os.ReadFile(filepath.Join(parent, file))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, file), v, 0o644)
}

// clusterCgroupRoots lists, per hierarchy, the folders of the cluster's real nodes that exist:
// found by name, so a cleanup after a lost supervisor finds them too.
func clusterCgroupRoots(cluster string) []string {
	re := regexp.MustCompile("^" + regexp.QuoteMeta(NodeName(cluster, 0)[:len(NodeName(cluster, 0))-1]) + "[0-9]+$")
	hs, _ := cgroupHierarchies()
	var out []string
	for _, h := range hs {
		entries, _ := os.ReadDir(h)
		for _, e := range entries {
			if e.IsDir() && re.MatchString(e.Name()) {
				out = append(out, filepath.Join(h, e.Name()))
			}
		}
	}
	return out
}

// cgroupTree lists dir and every folder below it, deepest first.
func cgroupTree(dir string) []string {
	var out []string
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			out = append(out, p)
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// pidsInCgroups lists the processes in any of the trees.
func pidsInCgroups(trees []string) []int {
	seen := map[int]bool{}
	var pids []int
	for _, t := range trees {
		for _, d := range cgroupTree(t) {
			b, err := os.ReadFile(filepath.Join(d, "cgroup.procs"))
			if err != nil {
				continue
			}
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil && !seen[pid] {
					seen[pid] = true
					pids = append(pids, pid)
				}
			}
		}
	}
	return pids
}

// killCgroups SIGKILLs every process in the trees (containers, their shims' children) until
// none is left, then removes the trees. A frozen v1 freezer would keep them alive: thaw first.
func killCgroups(trees []string, timeout time.Duration) error {
	for _, t := range trees {
		for _, d := range cgroupTree(t) {
			_ = os.WriteFile(filepath.Join(d, "freezer.state"), []byte("THAWED"), 0o644)
		}
	}
	deadline := time.Now().Add(timeout)
	for {
		pids := pidsInCgroups(trees)
		if len(pids) == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes %v survived SIGKILL in cgroups %v", pids, trees)
		}
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		time.Sleep(20 * time.Millisecond)
	}
	var errs []error
	for _, t := range trees {
		for _, d := range cgroupTree(t) {
			if err := removeCgroup(d, deadline); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// removeCgroup rmdirs an empty cgroup; EBUSY lasts while the last killed process is reaped.
func removeCgroup(dir string, deadline time.Time) error {
	for {
		err := syscall.Rmdir(dir)
		if err == nil || errors.Is(err, syscall.ENOENT) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return fmt.Errorf("rmdir cgroup %s: %w", dir, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
