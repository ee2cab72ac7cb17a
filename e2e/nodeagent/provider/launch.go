package provider

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/cozystack/etcd-operator/e2e/nodeagent/containerinit"
	"github.com/cozystack/etcd-operator/e2e/nodeagent/envvars"
	"github.com/cozystack/etcd-operator/e2e/nodeagent/images"
	"github.com/cozystack/etcd-operator/e2e/nodeagent/podfiles"
)

// identity is the user a container runs as (-1: root / unset).
type identity struct {
	uid, gid int
	groups   []int
}

// containerIdentity applies the container's security context over the pod's, like the kubelet.
func containerIdentity(pod *corev1.Pod, c *corev1.Container) (identity, error) {
	id := identity{uid: -1, gid: -1}
	nonRoot := false
	if sc := pod.Spec.SecurityContext; sc != nil {
		id.uid = int(ptr.Deref(sc.RunAsUser, -1))
		id.gid = int(ptr.Deref(sc.RunAsGroup, -1))
		nonRoot = ptr.Deref(sc.RunAsNonRoot, false)
		if sc.FSGroup != nil {
			id.groups = append(id.groups, int(*sc.FSGroup))
		}
		for _, g := range sc.SupplementalGroups {
			id.groups = append(id.groups, int(g))
		}
	}
	if sc := c.SecurityContext; sc != nil {
		id.uid = int(ptr.Deref(sc.RunAsUser, int64(id.uid)))
		id.gid = int(ptr.Deref(sc.RunAsGroup, int64(id.gid)))
		nonRoot = ptr.Deref(sc.RunAsNonRoot, nonRoot)
	}
	if nonRoot && id.uid <= 0 {
		// The images here have no USER to fall back on, as the kubelet would.
		return id, fmt.Errorf("container has runAsNonRoot and no non-root runAsUser")
	}
	if id.uid >= 0 && id.gid < 0 {
		id.gid = id.uid
	}
	return id, nil
}

// launchPlan is a fully resolved container start.
type launchPlan struct {
	spec     containerinit.Spec
	resolved images.Resolution
	id       identity
}

// buildLaunch resolves image, environment, command, user and mounts of container c.
func (rt *podRuntime) buildLaunch(ctx context.Context, c *corev1.Container) (launchPlan, error) {
	res, err := rt.p.cfg.Images.Resolve(c.Image)
	if err != nil {
		return launchPlan{}, err
	}
	pod := rt.snapshotSpec()
	id, err := containerIdentity(pod, c)
	if err != nil {
		return launchPlan{}, err
	}
	vars, err := envvars.Resolve(pod, c, apiSources{ctx: ctx, p: rt.p})
	if err != nil {
		return launchPlan{}, err
	}
	env := rt.baseEnv(pod, res, id)
	if c.TTY {
		env = append(env, "TERM=xterm") // what containerd's CRI sets for a tty container
	}
	for _, v := range vars {
		env = append(env, v.Name+"="+v.Value)
	}
	argv := append(append([]string{}, c.Command...), c.Args...)
	if len(c.Command) == 0 {
		argv = append(append([]string{}, res.DefaultCommand...), c.Args...)
	}
	argv = envvars.ExpandArgs(argv, vars)
	rt.mu.Lock()
	vs := rt.volumes
	rt.mu.Unlock()
	mounts, err := vs.mountsFor(c, rt.etcFiles())
	if err != nil {
		return launchPlan{}, err
	}
	for _, m := range res.Mounts {
		mounts = append(mounts, containerinit.Mount{Source: m.Source, Target: m.Target, ReadOnly: true})
	}
	mounts = rt.finishMounts(c, mounts)
	scratch := filepath.Join(rt.dir, "scratch")
	if err := os.MkdirAll(scratch, 0o700); err != nil {
		return launchPlan{}, err
	}
	return launchPlan{resolved: res, id: id, spec: containerinit.Spec{
		Argv: argv, Env: env, WorkingDir: c.WorkingDir, Hostname: podfiles.Hostname(pod),
		UID: id.uid, GID: id.gid, Groups: id.groups, Mounts: mounts, ScratchDir: scratch,
	}}, nil
}

// finishMounts adds a container's private /tmp and its termination message file to its mounts,
// in an order that keeps every source reachable (see shadowingLast).
func (rt *podRuntime) finishMounts(c *corev1.Container, mounts []containerinit.Mount) []containerinit.Mount {
	if !hasTargetBelow(mounts, "/tmp") {
		// A container's /tmp is its own, as in an image, not the host's.
		mounts = append(mounts, containerinit.Mount{Target: "/tmp", Tmpfs: true, Options: "mode=1777,size=256m"})
	}
	if path := c.TerminationMessagePath; path != "" {
		// A bind mount of its own, as the kubelet's: writable whatever the rest of the root is,
		// and the container's own file (created at each start), never the host's /dev.
		mounts = append(mounts, containerinit.Mount{Source: terminationFile(rt.dir, c.Name), Target: filepath.Clean("/" + path)})
	}
	return shadowingLast(mounts, rt.dir)
}

// shadowingLast moves the mounts whose target is an ancestor of the agent's state directory
// (a volume or the private tmpfs on /tmp, where the local cluster keeps its state), and what
// is mounted below them, after the others. Mounted earlier, they would hide the sources of the
// later ones, which container-init opens again by path after a pivot_root. The others keep
// their order; the late ones go shallowest first, so a parent still comes before its children.
func shadowingLast(mounts []containerinit.Mount, stateDir string) []containerinit.Mount {
	var shadows []string
	for _, m := range mounts {
		if t := filepath.Clean(m.Target); stateDir == t || strings.HasPrefix(stateDir, t+"/") {
			shadows = append(shadows, t)
		}
	}
	var early, late []containerinit.Mount
	for _, m := range mounts {
		shadowed := false
		for _, s := range shadows {
			shadowed = shadowed || hasTargetBelow([]containerinit.Mount{m}, s)
		}
		if shadowed {
			late = append(late, m)
		} else {
			early = append(early, m)
		}
	}
	slices.SortStableFunc(late, func(a, b containerinit.Mount) int { return depth(a.Target) - depth(b.Target) })
	return append(early, late...)
}

func depth(p string) int { return strings.Count(filepath.Clean(p), "/") }

// baseEnv is what a container runtime and the kubelet add before the container's own env.
func (rt *podRuntime) baseEnv(pod *corev1.Pod, res images.Resolution, id identity) []string {
	home := "/root"
	if id.uid > 0 {
		home = "/"
	}
	env := []string{"PATH=" + res.Path, "HOSTNAME=" + podfiles.Hostname(pod), "HOME=" + home}
	if host, port := rt.p.cfg.APIServerHost, rt.p.cfg.APIServerPort; host != "" {
		env = append(env, "KUBERNETES_SERVICE_HOST="+host, "KUBERNETES_SERVICE_PORT="+port,
			"KUBERNETES_SERVICE_PORT_HTTPS="+port, "KUBERNETES_PORT=tcp://"+hostPort(host, port))
	}
	return env
}

func hostPort(host, port string) string {
	if _, err := strconv.Atoi(port); err != nil {
		return host
	}
	return host + ":" + port
}

// apiSources reads env var sources straight from the API (fresher than an informer cache).
type apiSources struct {
	ctx context.Context
	p   *Provider
}

func (s apiSources) Secret(namespace, name string) (*corev1.Secret, error) {
	obj, err := s.p.cfg.Client.CoreV1().Secrets(namespace).Get(s.ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return obj, err
}

func (s apiSources) ConfigMap(namespace, name string) (*corev1.ConfigMap, error) {
	obj, err := s.p.cfg.Client.CoreV1().ConfigMaps(namespace).Get(s.ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return obj, err
}

// hasTargetBelow reports whether a mount targets dir or a path inside it.
func hasTargetBelow(mounts []containerinit.Mount, dir string) bool {
	for _, m := range mounts {
		if t := filepath.Clean(m.Target); t == dir || strings.HasPrefix(t, dir+"/") {
			return true
		}
	}
	return false
}
