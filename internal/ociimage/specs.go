package ociimage

import (
	"strconv"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// The operator image, as the Dockerfile describes it: one static binary at ManagerPath (the
// manager and the agents its Pods run as `/manager <agent>`), run as nonroot.
const (
	ManagerPath    = "/manager"
	ManagerPackage = "./operator/cmd/manager"
	OperatorUser   = "65532:65532"
)

// ManagerBuildFlags are the flags of the Dockerfile's `CGO_ENABLED=0 go build`; `make build`
// does not strip its binaries, so `make images` builds the manager again with these.
var ManagerBuildFlags = []string{"-trimpath", "-ldflags=-s"}

// OperatorSpec is the operator image named ref, with the manager binary at manager on the host.
func OperatorSpec(ref, manager string, h Host) (Spec, error) {
	base, err := BaseLayer(h)
	if err != nil {
		return Spec{}, err
	}
	return Spec{
		Name: ref,
		Layers: []LayerSpec{base, {
			CreatedBy: "COPY --from=build /manager /manager",
			Entries:   []Entry{HostFile(ManagerPath, 0o755, manager)},
		}},
		Config: v1.Config{
			User:       OperatorUser,
			Entrypoint: []string{ManagerPath},
			Env:        []string{DefaultPath, "SSL_CERT_FILE=" + CACertificatesPath},
			WorkingDir: "/home/nonroot",
		},
	}, nil
}

// The etcd image, laid out like etcd's release images (distroless static, the three binaries
// in /usr/local/bin, the default command etcd): member Pods run `etcd` from PATH, the restore
// init container the image's /usr/local/bin/etcdutl.
const (
	EtcdBinDir = "/usr/local/bin"
	EtcdClient = 2379
	EtcdPeer   = 2380
)

// EtcdBinaries are the programs of an etcd image, from the tools cache's etcd-v<version>/.
var EtcdBinaries = []string{"etcd", "etcdctl", "etcdutl"}

// EtcdSpec is the etcd image of version, its binaries from the host folder binDir.
func EtcdSpec(version, binDir string, h Host) (Spec, error) {
	base, err := BaseLayer(h)
	if err != nil {
		return Spec{}, err
	}
	var bins []Entry
	for _, b := range EtcdBinaries {
		bins = append(bins, HostFile(EtcdBinDir+"/"+b, 0o755, binDir+"/"+b))
	}
	return Spec{
		Name: EtcdImage(version),
		Layers: []LayerSpec{base,
			{CreatedBy: "ADD etcd etcdctl etcdutl /usr/local/bin/", Entries: bins},
			{CreatedBy: "WORKDIR /var/etcd/ /var/lib/etcd/", Entries: []Entry{Dir("/var/etcd", 0o755), Dir("/var/lib/etcd", 0o755)}},
		},
		Config: v1.Config{
			Env:          []string{DefaultPath},
			Cmd:          []string{EtcdBinDir + "/etcd"},
			WorkingDir:   "/var/lib/etcd",
			ExposedPorts: map[string]struct{}{port(EtcdClient): {}, port(EtcdPeer): {}},
		},
	}, nil
}

func port(p int) string { return strconv.Itoa(p) + "/tcp" }

// The pause image: one static binary that holds a Pod's namespaces, run as the upstream
// pause image runs (65535).
const (
	PausePath    = "/pause"
	PausePackage = "./hack/images/pause"
	PauseUser    = "65535:65535"
)

// PauseSpec is the pause image with the pause binary at pause on the host.
func PauseSpec(pause string) Spec {
	return Spec{
		Name:   PauseImage,
		Layers: []LayerSpec{{CreatedBy: "ADD pause /pause", Entries: []Entry{HostFile(PausePath, 0o755, pause)}}},
		Config: v1.Config{User: PauseUser, Entrypoint: []string{PausePath}},
	}
}
