package images

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func fakeToolsDir(t *testing.T, versions ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, v := range versions {
		d := filepath.Join(dir, "etcd-"+v)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "etcd"), nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestResolve(t *testing.T) {
	tools := fakeToolsDir(t, "v3.6.16", "v3.7.3")
	if err := os.MkdirAll(filepath.Join(tools, "kubernetes-v1.37.2"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tools, "kubernetes-v1.37.2", "kube-apiserver"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	operator := filepath.Join(t.TempDir(), "manager")
	if err := os.WriteFile(operator, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	table := Table{ToolsDir: tools, OperatorBinary: operator}
	cases := []struct {
		image   string
		kind    Kind
		mount   string // host folder shown at ImageBinDir
		command string
		errHas  string
	}{
		{image: "quay.io/coreos/etcd:v3.6.16", kind: KindEtcd, mount: filepath.Join(tools, "etcd-v3.6.16"), command: "etcd"},
		{image: "registry.k8s.io/etcd:3.7.3-0", kind: KindEtcd, mount: filepath.Join(tools, "etcd-v3.7.3"), command: "etcd"},
		{image: "etcd:v3.7.3@sha256:abc", kind: KindEtcd, mount: filepath.Join(tools, "etcd-v3.7.3"), command: "etcd"},
		{image: "localhost:5000/etcd:v3.7.3", kind: KindEtcd, mount: filepath.Join(tools, "etcd-v3.7.3"), command: "etcd"},
		{image: "quay.io/coreos/etcd:v3.4.0", errHas: "available: v3.6.16, v3.7.3"},
		{image: "ghcr.io/cozystack/etcd-operator:dev", kind: KindOperator, mount: filepath.Dir(operator), command: "/usr/local/bin/manager"},
		{image: "busybox:1.36", kind: KindBusybox, command: "sh"},
		{image: "docker.io/library/busybox", kind: KindBusybox, command: "sh"},
		{image: "registry.k8s.io/kube-apiserver:v1.37.2", kind: KindKubeAPIServer, mount: filepath.Join(tools, "kubernetes-v1.37.2"), command: "kube-apiserver"},
		{image: "registry.k8s.io/kube-apiserver:v1.30.0", errHas: "not in the tools cache"},
		{image: "nginx:1.27", errHas: "unknown image"},
		{image: "quay.io/coreos/etcd-backup:v1", errHas: "unknown image"},
	}
	for _, tc := range cases {
		t.Run(tc.image, func(t *testing.T) {
			res, err := table.Resolve(tc.image)
			if tc.errHas != "" {
				var pe *PullError
				if !errors.As(err, &pe) || !strings.Contains(err.Error(), tc.errHas) || !strings.Contains(err.Error(), tc.image) {
					t.Fatalf("want PullError naming %q containing %q, got %v", tc.image, tc.errHas, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			mounted := ""
			if len(res.Mounts) > 0 && res.Mounts[0].Target == ImageBinDir {
				mounted = res.Mounts[0].Source
			}
			if res.Kind != tc.kind || mounted != tc.mount || res.Path != HostPath || res.DefaultCommand[0] != tc.command {
				t.Fatalf("got %+v", res)
			}
		})
	}
}

func TestOperatorImageWithoutBinary(t *testing.T) {
	_, err := Table{ToolsDir: t.TempDir()}.Resolve("etcd-operator:v1")
	if err == nil || !strings.Contains(err.Error(), "--operator-binary") {
		t.Fatalf("got %v", err)
	}
}

func TestEtcdVersion(t *testing.T) {
	for in, want := range map[string]string{"v3.6.16": "v3.6.16", "3.6.16-0": "v3.6.16", "3.5.35": "v3.5.35"} {
		if got := EtcdVersion(in); got != want {
			t.Errorf("EtcdVersion(%q) = %q, want %q", in, got, want)
		}
	}
}
