package resources

import (
	"path"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cozystack/etcd-operator/internal/ociimage"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/snapshot"
)

// imageFiles are the regular files of the images `make images` builds, by image name and path.
func imageFiles(t *testing.T, operator string, versions ...string) map[string]map[string]ociimage.Entry {
	t.Helper()
	host := ociimage.Host{CACertificates: "/host/ca.crt", ZoneInfo: t.TempDir()}
	specs := []ociimage.Spec{}
	s, err := ociimage.OperatorSpec(operator, "/host/manager", host)
	if err != nil {
		t.Fatal(err)
	}
	specs = append(specs, s)
	for _, v := range versions {
		s, err := ociimage.EtcdSpec(v, "/host/etcd", host)
		if err != nil {
			t.Fatal(err)
		}
		specs = append(specs, s)
	}
	out := map[string]map[string]ociimage.Entry{}
	for _, s := range specs {
		files := map[string]ociimage.Entry{}
		for _, l := range s.Layers {
			for _, e := range l.Entries {
				if !e.Dir && e.Link == "" {
					files[e.Path] = e
				}
			}
		}
		out[s.Name] = files
	}
	return out
}

// imagePath is the PATH of the built images (the same for all that have one).
func imagePath(t *testing.T) []string {
	t.Helper()
	s, err := ociimage.EtcdSpec("3.6.16", "/host/etcd", ociimage.Host{ZoneInfo: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range s.Config.Env {
		if p, ok := strings.CutPrefix(e, "PATH="); ok {
			return strings.Split(p, ":")
		}
	}
	t.Fatal("the etcd image has no PATH")
	return nil
}

// TestContainersFindWhatTheyRunInTheBuiltImages: every container the operator builds, run from
// the images `make images` builds (the chart's defaults), finds its program, executable by the
// non-root user its Pod runs as; a program on a shared volume was installed there by an earlier
// init container from the operator's image; the restore agent finds etcdutl where it looks.
func TestContainersFindWhatTheyRunInTheBuiltImages(t *testing.T) {
	const operator = "ghcr.io/cozystack/etcd-operator:0.1.0"
	images := imageFiles(t, operator, "3.6.16")
	pathDirs := imagePath(t)

	restoring := testMember("etcd-abcde")
	restoring.Spec.Bootstrap = true
	restoring.Spec.Storage.Medium = v1alpha2.StorageMediumMemory
	restoring.Spec.Restore = &v1alpha2.MemberRestore{Source: v1alpha2.RestoreSource{PVC: &v1alpha2.PVCLocation{ClaimName: "backups", SubPath: "s.db"}}}
	restoring.Spec.TLS = &v1alpha2.MemberTLS{PeerAutoTLS: true, PeerSecretRef: &corev1.LocalObjectReference{Name: "peer"}}
	opts := PodOptions{AgentImage: operator}
	c := testCluster()
	s := &v1alpha2.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "snap", Namespace: "tenant", UID: "s-uid"},
		Spec: v1alpha2.EtcdSnapshotSpec{ClusterRef: corev1.LocalObjectReference{Name: "etcd"}}}
	er := QuorumLossRestore(c, "8e9e05c52164694d", "snap")
	force := ForceNewClusterContainer(restoring, operator)

	pods := map[string]*corev1.Pod{
		"member (tmpfs, restoring, peer fixtures)": Pod(restoring, opts),
		"member":           Pod(testMember("etcd-fghij"), opts),
		"snapshot agent":   SnapshotAgentPod(s, c, AgentSource{}, operator),
		"snapshot cleanup": SnapshotCleanupPod(s, c, operator),
		"restore verify":   RestoreVerifyPod(er, c, restoring.Spec.Restore, operator),
		"force-new-cluster (ephemeral)": {Spec: corev1.PodSpec{
			Containers:          []corev1.Container{{Name: "stand-in for the member's etcd", Image: ociimage.EtcdImage("3.6.16"), Command: []string{"etcd"}}},
			EphemeralContainers: []corev1.EphemeralContainer{force},
		}},
	}
	if len(pods["member (tmpfs, restoring, peer fixtures)"].Spec.InitContainers) != 4 {
		t.Fatalf("the member Pod has init containers %v, want the guard, install-tools, restore, peer fixtures",
			pods["member (tmpfs, restoring, peer fixtures)"].Spec.InitContainers)
	}
	for name, pod := range pods {
		containers := append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...)
		for _, e := range pod.Spec.EphemeralContainers {
			containers = append(containers, corev1.Container(e.EphemeralContainerCommon))
		}
		installed := map[string]string{} // volume → the image whose manager install-tools copied there
		for _, ctr := range containers {
			files, ok := images[ctr.Image]
			if !ok {
				t.Errorf("%s/%s runs image %s, which make images does not build", name, ctr.Name, ctr.Image)
				continue
			}
			if len(ctr.Command) == 0 {
				t.Errorf("%s/%s has no command", name, ctr.Name)
				continue
			}
			program := ctr.Command[0]
			switch {
			case !path.IsAbs(program):
				program = lookPath(files, pathDirs, program)
				if program == "" {
					t.Errorf("%s/%s: %s is not on the image's PATH %v", name, ctr.Name, ctr.Command[0], pathDirs)
					continue
				}
			case onVolume(ctr, program) != "":
				from, ok := installed[onVolume(ctr, program)]
				if !ok || path.Base(program) != "manager" {
					t.Errorf("%s/%s runs %s from a volume nothing installed it on", name, ctr.Name, program)
					continue
				}
				files, program = images[from], ociimage.ManagerPath
			}
			checkExecutable(t, name+"/"+ctr.Name, files, program)
			if len(ctr.Command) > 2 && ctr.Command[1] == snapshot.CommandInstallTools {
				installed[onVolume(ctr, ctr.Command[2]+"/manager")] = ctr.Image
			}
			if restoresWithEtcdutl(ctr) {
				checkExecutable(t, name+"/"+ctr.Name+" (etcdutl)", images[ctr.Image], snapshot.DefaultEtcdutl)
			}
		}
	}
}

// lookPath finds a program on the image's PATH, as the runtime does for a relative command.
func lookPath(files map[string]ociimage.Entry, dirs []string, program string) string {
	for _, d := range dirs {
		if _, ok := files[path.Join(d, program)]; ok {
			return path.Join(d, program)
		}
	}
	return ""
}

// onVolume is the volume the container mounts at a folder holding p, if any.
func onVolume(ctr corev1.Container, p string) string {
	for _, m := range ctr.VolumeMounts {
		if strings.HasPrefix(p, strings.TrimSuffix(m.MountPath, "/")+"/") {
			return m.Name
		}
	}
	return ""
}

// restoresWithEtcdutl: the restore agent writes a data dir with the image's etcdutl (not when it
// only verifies, and at the default path unless its environment names another).
func restoresWithEtcdutl(ctr corev1.Container) bool {
	if !strings.Contains(strings.Join(ctr.Command, " "), snapshot.CommandRestoreAgent) {
		return false
	}
	for _, e := range ctr.Env {
		if e.Name == snapshot.EnvRestoreVerifyOnly || e.Name == snapshot.EnvEtcdutl {
			return false
		}
	}
	return true
}

// checkExecutable: a root-owned regular file that everyone (the Pods' user 65532) may run.
func checkExecutable(t *testing.T, who string, files map[string]ociimage.Entry, p string) {
	t.Helper()
	e, ok := files[p]
	switch {
	case !ok:
		t.Errorf("%s: no file %s in the image", who, p)
	case e.Mode&0o005 != 0o005:
		t.Errorf("%s: %s has mode %v, which user %d may not run", who, p, e.Mode, ociimage.NonRootID)
	}
}
