//go:build e2e

package realnodes

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/cozystack/etcd-operator/internal/ociimage"
)

// imagesDirEnv names the folder of `make images`' tarballs, the same the local cluster imports
// into its real nodes.
const imagesDirEnv = "LC_IMAGES_DIR"

// imageNameAnnotation is the annotation of an OCI index entry that containerd's import takes as
// the image's name.
const imageNameAnnotation = "io.containerd.image.name"

// ociIndex and ociManifest are the parts of the OCI image layout the check reads.
type ociIndex struct {
	Manifests []struct {
		Digest      string            `json:"digest"`
		Annotations map[string]string `json:"annotations"`
	} `json:"manifests"`
}

type ociManifest struct {
	Config struct {
		Digest string `json:"digest"`
	} `json:"config"`
}

// builtImageDigests are the digests by which a runtime may report the image named name from
// the tarball archive of $LC_IMAGES_DIR (ociimage's archive names): its manifest's and its
// config's (the image ID). A container whose status.imageID carries one of them ran that build.
func builtImageDigests(t *testing.T, archive, name string) []string {
	t.Helper()
	dir := os.Getenv(imagesDirEnv)
	if dir == "" {
		t.Fatalf("$%s is not set: the suite needs the folder of `make images`", imagesDirEnv)
	}
	path := filepath.Join(dir, archive)
	digests, err := tarballDigests(path, name)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(digests) == 0 {
		t.Fatalf("%s holds no image named %s", path, name)
	}
	return digests
}

// tarballDigests reads one OCI layout tarball: the digests of the image named name, none if the
// tarball holds another image.
func tarballDigests(path, name string) ([]string, error) {
	blobs, err := readTarball(path)
	if err != nil {
		return nil, err
	}
	var idx ociIndex
	if err := json.Unmarshal(blobs["index.json"], &idx); err != nil {
		return nil, fmt.Errorf("index.json: %w", err)
	}
	var out []string
	for _, m := range idx.Manifests {
		if m.Annotations[imageNameAnnotation] != name {
			continue
		}
		var man ociManifest
		if err := json.Unmarshal(blobs["blobs/"+strings.Replace(m.Digest, ":", "/", 1)], &man); err != nil {
			return nil, fmt.Errorf("manifest %s: %w", m.Digest, err)
		}
		out = append(out, m.Digest, man.Config.Digest)
	}
	return out, nil
}

// readTarball is the tarball's small files (index.json, manifests, configs) by path; layers are
// skipped.
func readTarball(path string) (map[string][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if h.Typeflag != tar.TypeReg || h.Size > 1<<20 {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		out[strings.TrimPrefix(h.Name, "./")] = b
	}
}

// checkRanBuiltImage fails unless the Pod's container (or init container) ran image under
// containerd, from the build `make images` wrote into archive: the container ID is the
// runtime's and its image ID one of the build's digests (a node agent reports local:// for both).
func checkRanBuiltImage(t *testing.T, p *corev1.Pod, container, image, archive string) {
	t.Helper()
	var st *corev1.ContainerStatus
	for _, list := range [][]corev1.ContainerStatus{p.Status.ContainerStatuses, p.Status.InitContainerStatuses} {
		for i := range list {
			if list[i].Name == container {
				st = &list[i]
			}
		}
	}
	if st == nil {
		t.Fatalf("Pod %s has no status of container %s", p.Name, container)
	}
	if !strings.HasPrefix(st.ContainerID, "containerd://") {
		t.Errorf("Pod %s container %s: containerID %q, want one of containerd's", p.Name, container, st.ContainerID)
	}
	digests := builtImageDigests(t, archive, image)
	for _, d := range digests {
		if strings.HasSuffix(st.ImageID, d) {
			t.Logf("Pod %s container %s on %s: %s, image %s, imageID %s", p.Name, container, p.Spec.NodeName, st.ContainerID, st.Image, st.ImageID)
			return
		}
	}
	t.Errorf("Pod %s container %s: imageID %q is none of the built %s's digests %v", p.Name, container, st.ImageID, image, digests)
}

// checkRanBuiltEtcd: the Pod's container ran the etcd image of version built here.
func checkRanBuiltEtcd(t *testing.T, p *corev1.Pod, container, version string) {
	t.Helper()
	checkRanBuiltImage(t, p, container, ociimage.EtcdImage(version), ociimage.EtcdArchive(version))
}

// checkRanBuiltOperator: the Pod's container ran the operator image built here.
func (s *suite) checkRanBuiltOperator(t *testing.T, p *corev1.Pod, container string) {
	t.Helper()
	checkRanBuiltImage(t, p, container, s.operatorImage, ociimage.OperatorArchive)
}
