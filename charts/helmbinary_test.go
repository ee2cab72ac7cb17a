package charts_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// toolsHelm is the helm binary `make tools` builds, or "" when the tools cache lacks it.
func toolsHelm(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("ETCD_OPERATOR_TOOLS")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".cache", "etcd-operator-tools")
	}
	version := pinnedVersion(t, "HELM_VERSION")
	bin := filepath.Join(dir, "helm-"+version, "helm")
	if _, err := os.Stat(bin); err != nil {
		return ""
	}
	return bin
}

// pinnedVersion reads a tool version from hack/versions.env.
func pinnedVersion(t *testing.T, name string) string {
	t.Helper()
	f, err := os.Open("../hack/versions.env")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(strings.TrimSpace(s.Text()), name+"="); ok {
			return strings.Trim(v, `"'`)
		}
	}
	t.Fatalf("%s not in hack/versions.env", name)
	return ""
}

// TestToolsHelmTemplatesWithoutKubeVersion runs the tools cache's helm as a user would, with no
// --kube-version. A helm built without the Kubernetes version helm's release builds stamp in
// assumes v1.20.0 and refuses the chart's kubeVersion (>=1.30).
func TestToolsHelmTemplatesWithoutKubeVersion(t *testing.T) {
	helm := toolsHelm(t)
	if helm == "" {
		t.Skip("no helm in the tools cache: run make tools")
	}
	out, err := exec.Command(helm, "template", "./"+operatorChart).CombinedOutput()
	if err != nil {
		t.Fatalf("%s template %s: %v\n%s", helm, operatorChart, err, out)
	}
	if !strings.Contains(string(out), "kind: Deployment") {
		t.Fatalf("helm template rendered no Deployment:\n%s", out)
	}
}
