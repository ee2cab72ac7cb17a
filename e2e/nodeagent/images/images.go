// Package images maps container image references to binaries on this machine: the local cluster
// has no container runtime, so an "image" is a folder of the tools cache (etcd) or a host binary.
package images

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Kind says which family of binaries an image resolves to.
type Kind string

const (
	KindEtcd     Kind = "etcd"
	KindOperator Kind = "etcd-operator"
	KindBusybox  Kind = "busybox"
	// KindKubeAPIServer runs the tools cache's kube-apiserver (a tenant control plane in e2e).
	KindKubeAPIServer Kind = "kube-apiserver"
)

// HostPath is the PATH of busybox-like images: the host's own tools.
const HostPath = "/usr/local/bin:/usr/bin:/bin"

// Table holds what the resolver needs to know about this machine.
type Table struct {
	ToolsDir       string // tools cache holding etcd-v<version>/{etcd,etcdctl,etcdutl}
	OperatorBinary string // may be empty: operator images then fail to "pull"
}

// ImageBinDir is where an image's binaries appear inside the container, as in the real images
// (etcd's image has /usr/local/bin/etcd). The host folder is bind-mounted there rather than put on
// PATH as is, because the tools cache (under /root) is not reachable for a non-root container user.
const ImageBinDir = "/usr/local/bin"

// Mount is a host path shown inside the container.
type Mount struct{ Source, Target string }

// Resolution is what an image becomes: mounts, a PATH and the command run when the Pod gives none.
type Resolution struct {
	Kind           Kind
	Mounts         []Mount
	Path           string   // PATH of the container
	DefaultCommand []string // image entrypoint
}

// PullError is the ErrImagePull message: the image cannot be run here.
type PullError struct {
	Image  string
	Reason string
}

func (e *PullError) Error() string { return fmt.Sprintf("image %q: %s", e.Image, e.Reason) }

// Reference is an image reference split into repository (with registry) and tag.
type Reference struct {
	Repository string
	Tag        string
}

// Parse splits an image reference; a digest is dropped, a missing tag is "latest".
func Parse(image string) Reference {
	ref := image
	if i := strings.Index(ref, "@"); i >= 0 {
		ref = ref[:i]
	}
	tag := "latest"
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		tag = ref[i+1:]
		ref = ref[:i]
	}
	return Reference{Repository: ref, Tag: tag}
}

// lastPathElement is the image name without registry and organisation.
func (r Reference) lastPathElement() string {
	return r.Repository[strings.LastIndex(r.Repository, "/")+1:]
}

// EtcdVersion turns an etcd image tag into a tools-cache version: "v3.6.16" and registry.k8s.io's
// "3.6.16-0" both become "v3.6.16".
func EtcdVersion(tag string) string {
	v := strings.TrimPrefix(tag, "v")
	if i := strings.Index(v, "-"); i >= 0 {
		v = v[:i]
	}
	return "v" + v
}

// Resolve maps an image to binaries, or returns a *PullError naming what is available.
func (t Table) Resolve(image string) (Resolution, error) {
	ref := Parse(image)
	switch name := ref.lastPathElement(); {
	case name == "etcd":
		return t.resolveEtcd(image, ref)
	case name == "etcd-operator":
		return t.resolveOperator(image)
	case name == "kube-apiserver":
		return t.resolveKube(image, ref, name)
	case name == "busybox" || name == "alpine" || name == "debian" || name == "ubuntu":
		return Resolution{Kind: KindBusybox, Path: HostPath, DefaultCommand: []string{"sh"}}, nil
	}
	return Resolution{}, &PullError{Image: image, Reason: "unknown image: the local cluster runs only " +
		"<registry>/etcd:v<version>, <registry>/etcd-operator:<tag>, <registry>/kube-apiserver:v<version> and busybox-like images"}
}

func (t Table) resolveEtcd(image string, ref Reference) (Resolution, error) {
	version := EtcdVersion(ref.Tag)
	dir := filepath.Join(t.ToolsDir, "etcd-"+version)
	if _, err := os.Stat(filepath.Join(dir, "etcd")); err != nil {
		return Resolution{}, &PullError{Image: image, Reason: fmt.Sprintf(
			"etcd %s is not in the tools cache %s (available: %s)", version, t.ToolsDir,
			strings.Join(t.AvailableEtcdVersions(), ", "))}
	}
	return Resolution{Kind: KindEtcd, Mounts: []Mount{{Source: dir, Target: ImageBinDir}},
		Path: HostPath, DefaultCommand: []string{"etcd"}}, nil
}

// resolveKube maps <registry>/kube-apiserver:v<version> to the tools cache's kubernetes-v<version>.
func (t Table) resolveKube(image string, ref Reference, binary string) (Resolution, error) {
	version := "v" + strings.TrimPrefix(ref.Tag, "v")
	dir := filepath.Join(t.ToolsDir, "kubernetes-"+version)
	if _, err := os.Stat(filepath.Join(dir, binary)); err != nil {
		return Resolution{}, &PullError{Image: image, Reason: fmt.Sprintf("%s %s is not in the tools cache %s", binary, version, t.ToolsDir)}
	}
	return Resolution{Kind: KindKubeAPIServer, Mounts: []Mount{{Source: dir, Target: ImageBinDir}},
		Path: HostPath, DefaultCommand: []string{binary}}, nil
}

func (t Table) resolveOperator(image string) (Resolution, error) {
	if t.OperatorBinary == "" {
		return Resolution{}, &PullError{Image: image, Reason: "no operator binary was given to the node agent (--operator-binary)"}
	}
	if _, err := os.Stat(t.OperatorBinary); err != nil {
		return Resolution{}, &PullError{Image: image, Reason: fmt.Sprintf("operator binary %s: %v", t.OperatorBinary, err)}
	}
	inImage := filepath.Join(ImageBinDir, filepath.Base(t.OperatorBinary))
	return Resolution{Kind: KindOperator, Path: HostPath, DefaultCommand: []string{inImage},
		// Also at /manager, where kubebuilder-style images keep it.
		Mounts: []Mount{{Source: filepath.Dir(t.OperatorBinary), Target: ImageBinDir}, {Source: t.OperatorBinary, Target: "/manager"}}}, nil
}

// AvailableEtcdVersions lists the etcd versions of the tools cache, for error messages.
func (t Table) AvailableEtcdVersions() []string {
	matches, _ := filepath.Glob(filepath.Join(t.ToolsDir, "etcd-v*", "etcd"))
	versions := make([]string, 0, len(matches))
	for _, m := range matches {
		versions = append(versions, strings.TrimPrefix(filepath.Base(filepath.Dir(m)), "etcd-"))
	}
	sort.Strings(versions)
	if len(versions) == 0 {
		return []string{"none"}
	}
	return versions
}
