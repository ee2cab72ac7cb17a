package provider

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/cozystack/etcd-operator/e2e/nodeagent/containerinit"
	"github.com/cozystack/etcd-operator/e2e/nodeagent/podfiles"
)

// errNotReady marks a volume that cannot be set up yet (e.g. an unbound PVC); setup is retried.
var errNotReady = errors.New("not ready")

// owner is who writable volumes and volume files belong to (-1: leave as is).
type owner struct{ uid, gid int }

// podOwner derives the volume owner from the pod's security context: runAsUser, and fsGroup
// (else runAsGroup) as the group, like the kubelet's fsGroup handling.
func podOwner(pod *corev1.Pod) owner {
	o := owner{uid: -1, gid: -1}
	if sc := pod.Spec.SecurityContext; sc != nil {
		o.uid = int(ptr.Deref(sc.RunAsUser, -1))
		o.gid = int(ptr.Deref(sc.RunAsGroup, -1))
		if sc.FSGroup != nil {
			o.gid = int(*sc.FSGroup)
		}
	}
	if o.uid < 0 {
		for _, c := range append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
			if c.SecurityContext != nil && c.SecurityContext.RunAsUser != nil {
				o.uid = int(*c.SecurityContext.RunAsUser)
				if o.gid < 0 && c.SecurityContext.RunAsGroup != nil {
					o.gid = int(*c.SecurityContext.RunAsGroup)
				}
				break
			}
		}
	}
	return o
}

// volumeSetup materialises a pod's volumes on the host and knows their backing paths.
type volumeSetup struct {
	p      *Provider
	pod    *corev1.Pod
	dir    string // <pod dir>/volumes
	owner  owner
	source map[string]string // volume name -> host path to bind
	memory []string          // tmpfs mounted by the agent, to unmount at deletion
}

func (p *Provider) setupVolumes(ctx context.Context, pod *corev1.Pod, podDir string) (*volumeSetup, error) {
	vs := &volumeSetup{p: p, pod: pod, dir: filepath.Join(podDir, "volumes"), owner: podOwner(pod), source: map[string]string{}}
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		path, err := vs.setup(ctx, v)
		if err != nil {
			return vs, fmt.Errorf("volume %q: %w", v.Name, err)
		}
		vs.source[v.Name] = path
	}
	return vs, nil
}

func (vs *volumeSetup) setup(ctx context.Context, v *corev1.Volume) (string, error) {
	dir := filepath.Join(vs.dir, v.Name)
	switch {
	case v.EmptyDir != nil:
		return dir, vs.emptyDir(dir, v.EmptyDir)
	case v.HostPath != nil:
		return hostPath(v.HostPath)
	case v.PersistentVolumeClaim != nil:
		return vs.pvc(ctx, v.PersistentVolumeClaim.ClaimName)
	case v.Secret != nil, v.ConfigMap != nil, v.DownwardAPI != nil, v.Projected != nil:
		files, err := vs.files(ctx, v)
		if err != nil {
			return "", err
		}
		// The folder itself must stay: running containers (re-adopted after an agent restart)
		// have it bind-mounted. Its content is swapped atomically (see podfiles.WriteAtomic),
		// which is also how refreshes reach running containers.
		_, err = podfiles.WriteAtomic(dir, files, vs.owner.uid, vs.owner.gid)
		return dir, err
	}
	return "", fmt.Errorf("unsupported volume type")
}

func (vs *volumeSetup) emptyDir(dir string, ed *corev1.EmptyDirVolumeSource) error {
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return err
	}
	if ed.Medium == corev1.StorageMediumMemory && !isMountPoint(dir) {
		opts := "mode=0777"
		if ed.SizeLimit != nil && !ed.SizeLimit.IsZero() {
			opts += fmt.Sprintf(",size=%d", ed.SizeLimit.Value())
		}
		if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, opts); err != nil {
			return fmt.Errorf("tmpfs: %w", err)
		}
	}
	if ed.Medium == corev1.StorageMediumMemory {
		vs.memory = append(vs.memory, dir)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		return err
	}
	return chownTree(dir, vs.owner)
}

func hostPath(hp *corev1.HostPathVolumeSource) (string, error) {
	t := ptr.Deref(hp.Type, corev1.HostPathUnset)
	if t == corev1.HostPathDirectoryOrCreate {
		return hp.Path, os.MkdirAll(hp.Path, 0o755)
	}
	if _, err := os.Stat(hp.Path); err != nil && t != corev1.HostPathUnset {
		return "", err
	}
	return hp.Path, nil
}

// pvc resolves a claim to the host directory of its (hostPath or local) PersistentVolume.
func (vs *volumeSetup) pvc(ctx context.Context, claim string) (string, error) {
	core := vs.p.cfg.Client.CoreV1()
	pvc, err := core.PersistentVolumeClaims(vs.pod.Namespace).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	if pvc.Status.Phase != corev1.ClaimBound || pvc.Spec.VolumeName == "" {
		return "", fmt.Errorf("%w: PVC %s is %s", errNotReady, claim, pvc.Status.Phase)
	}
	pv, err := core.PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	var path string
	switch {
	case pv.Spec.HostPath != nil:
		path = pv.Spec.HostPath.Path
	case pv.Spec.Local != nil:
		path = pv.Spec.Local.Path
	default:
		return "", fmt.Errorf("PV %s is neither hostPath nor local", pv.Name)
	}
	if err := os.MkdirAll(path, 0o755); err != nil {
		return "", err
	}
	return path, chownTree(path, vs.owner)
}

// files renders the content of a Secret, ConfigMap, downward API or projected volume.
func (vs *volumeSetup) files(ctx context.Context, v *corev1.Volume) ([]podfiles.File, error) {
	switch {
	case v.Secret != nil:
		return vs.secretFiles(ctx, v.Secret.SecretName, v.Secret.Items, v.Secret.DefaultMode, ptr.Deref(v.Secret.Optional, false))
	case v.ConfigMap != nil:
		return vs.configMapFiles(ctx, v.ConfigMap.Name, v.ConfigMap.Items, v.ConfigMap.DefaultMode, ptr.Deref(v.ConfigMap.Optional, false))
	case v.DownwardAPI != nil:
		return podfiles.DownwardFiles(vs.pod, v.DownwardAPI.Items, v.DownwardAPI.DefaultMode)
	}
	var all []podfiles.File
	for _, s := range v.Projected.Sources {
		files, err := vs.projectedFiles(ctx, s, v.Projected.DefaultMode)
		if err != nil {
			return nil, err
		}
		all = append(all, files...)
	}
	return all, nil
}

func (vs *volumeSetup) projectedFiles(ctx context.Context, s corev1.VolumeProjection, mode *int32) ([]podfiles.File, error) {
	switch {
	case s.Secret != nil:
		return vs.secretFiles(ctx, s.Secret.Name, s.Secret.Items, mode, ptr.Deref(s.Secret.Optional, false))
	case s.ConfigMap != nil:
		return vs.configMapFiles(ctx, s.ConfigMap.Name, s.ConfigMap.Items, mode, ptr.Deref(s.ConfigMap.Optional, false))
	case s.DownwardAPI != nil:
		return podfiles.DownwardFiles(vs.pod, s.DownwardAPI.Items, mode)
	case s.ServiceAccountToken != nil:
		token, err := vs.token(ctx, s.ServiceAccountToken)
		if err != nil {
			return nil, err
		}
		m := os.FileMode(ptr.Deref(mode, 0o644)) & os.ModePerm
		return []podfiles.File{{Path: s.ServiceAccountToken.Path, Data: []byte(token), Mode: m}}, nil
	}
	return nil, fmt.Errorf("unsupported projected volume source")
}

func (vs *volumeSetup) secretFiles(ctx context.Context, name string, items []corev1.KeyToPath, mode *int32, optional bool) ([]podfiles.File, error) {
	s, err := vs.p.getSecret(ctx, vs.pod.Namespace, name)
	if apierrors.IsNotFound(err) && optional {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: secret %s: %v", errNotReady, name, err)
	}
	return podfiles.KeysToFiles(s.Data, items, mode, optional)
}

func (vs *volumeSetup) configMapFiles(ctx context.Context, name string, items []corev1.KeyToPath, mode *int32, optional bool) ([]podfiles.File, error) {
	cm, err := vs.p.getConfigMap(ctx, vs.pod.Namespace, name)
	if apierrors.IsNotFound(err) && optional {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: configmap %s: %v", errNotReady, name, err)
	}
	return podfiles.KeysToFiles(podfiles.ConfigMapData(cm), items, mode, optional)
}

// token asks the TokenRequest API for a token bound to the pod.
func (vs *volumeSetup) token(ctx context.Context, src *corev1.ServiceAccountTokenProjection) (string, error) {
	sa := vs.pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: ptr.To(ptr.Deref(src.ExpirationSeconds, 3607)),
		BoundObjectRef: &authenticationv1.BoundObjectReference{
			Kind: "Pod", APIVersion: "v1", Name: vs.pod.Name, UID: vs.pod.UID,
		},
	}}
	if src.Audience != "" {
		req.Spec.Audiences = []string{src.Audience}
	}
	resp, err := vs.p.cfg.Client.CoreV1().ServiceAccounts(vs.pod.Namespace).CreateToken(ctx, sa, req, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("%w: token for service account %s: %v", errNotReady, sa, err)
	}
	return resp.Status.Token, nil
}

// mountsFor lists a container's mounts, parents before children so nested targets land inside.
func (vs *volumeSetup) mountsFor(c *corev1.Container, etcFiles map[string]string) ([]containerinit.Mount, error) {
	var mounts []containerinit.Mount
	for _, vm := range c.VolumeMounts {
		src, ok := vs.source[vm.Name]
		if !ok {
			return nil, fmt.Errorf("volumeMount %q: no such volume", vm.Name)
		}
		if vm.SubPath != "" {
			src = filepath.Join(src, filepath.Clean("/"+vm.SubPath))
			if _, err := os.Stat(src); errors.Is(err, os.ErrNotExist) {
				if err := os.MkdirAll(src, 0o755); err != nil {
					return nil, err
				}
			}
		}
		mounts = append(mounts, containerinit.Mount{Source: src, Target: vm.MountPath, ReadOnly: vm.ReadOnly})
	}
	sort.SliceStable(mounts, func(i, j int) bool {
		return strings.Count(filepath.Clean(mounts[i].Target), "/") < strings.Count(filepath.Clean(mounts[j].Target), "/")
	})
	for _, target := range []string{"/etc/hosts", "/etc/resolv.conf", "/etc/hostname"} {
		if src, ok := etcFiles[target]; ok && !hasTarget(mounts, target) {
			mounts = append(mounts, containerinit.Mount{Source: src, Target: target})
		}
	}
	return mounts, nil
}

func hasTarget(mounts []containerinit.Mount, target string) bool {
	for _, m := range mounts {
		if filepath.Clean(m.Target) == target {
			return true
		}
	}
	return false
}

// chownTree hands a writable volume to the pod's user; it walks only when the top is not owned yet.
func chownTree(dir string, o owner) error {
	if o.uid < 0 && o.gid < 0 {
		return nil
	}
	st, err := os.Stat(dir)
	if err != nil {
		return err
	}
	sys := st.Sys().(*syscall.Stat_t)
	if (o.uid < 0 || int(sys.Uid) == o.uid) && (o.gid < 0 || int(sys.Gid) == o.gid) {
		return nil
	}
	return filepath.Walk(dir, func(path string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, o.uid, o.gid)
	})
}

// isMountPoint reports whether dir is a mount point in the agent's mount namespace.
func isMountPoint(dir string) bool {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == dir {
			return true
		}
	}
	return false
}

// teardownVolumes unmounts memory-backed emptyDirs and removes the pod's volume folder
// (PV and hostPath data live elsewhere and stay).
func teardownVolumes(podDir string) error {
	if err := unmountMemoryVolumes(podDir); err != nil {
		return err
	}
	return os.RemoveAll(filepath.Join(podDir, "volumes"))
}

// unmountMemoryVolumes unmounts the tmpfs of memory-backed emptyDirs.
func unmountMemoryVolumes(podDir string) error {
	dir := filepath.Join(podDir, "volumes")
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if isMountPoint(p) {
			if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil {
				return fmt.Errorf("unmount %s: %w", p, err)
			}
		}
	}
	return nil
}
