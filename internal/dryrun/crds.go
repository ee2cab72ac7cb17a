// Package dryrun validates rendered objects against their real schemas: it starts envtest (a real
// kube-apiserver and etcd from the tools cache) with our CRDs and every third-party CRD the charts
// and packages render objects of, then applies each object with server-side apply in dry-run
// mode, so the apiserver runs its full validation (OpenAPI schema, CEL rules, defaulting, field
// ownership) and stores nothing. Each rejection is reported with kind, name and the message.
package dryrun

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/cozystack/etcd-operator/internal/testenv"
)

// Third-party modules whose CRD YAML ships in the module itself; go.mod pins the versions (a
// blank import in this package's tests keeps them there).
const (
	certManagerModule = "github.com/cert-manager/cert-manager"
	vpaModule         = "k8s.io/autoscaler/vertical-pod-autoscaler"
)

// ThirdPartyCRDPaths lists the CRD files and folders envtest installs besides ours (which
// testenv.Start always installs): cert-manager's from its module, then PlatformCRDPaths.
func ThirdPartyCRDPaths() ([]string, error) {
	cm, err := ModuleDir(certManagerModule)
	if err != nil {
		return nil, err
	}
	platform, err := PlatformCRDPaths()
	if err != nil {
		return nil, err
	}
	return append([]string{filepath.Join(cm, "deploy", "crds")}, platform...), nil
}

// PlatformCRDPaths are the CRDs of the platform components besides cert-manager whose objects the
// charts and packages render: VPA's from its module, then the generated fixtures (Flux,
// monitoring, Kamaji, VictoriaMetrics; see internal/testenv/crds). The e2e suites that run
// cert-manager itself install its CRDs from the tools cache and these beside them.
func PlatformCRDPaths() ([]string, error) {
	vpa, err := ModuleDir(vpaModule)
	if err != nil {
		return nil, err
	}
	paths := []string{
		filepath.Join(vpa, "deploy", "vpa-v1-crd-gen.yaml"),
		testenv.FixtureCRDDir("flux"),
		testenv.FixtureCRDDir("monitoring"),
		testenv.FixtureCRDDir("kamaji"),
		testenv.FixtureCRDDir("victoriametrics"),
	}
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("CRDs missing (run make manifests, or go mod download): %w", err)
		}
	}
	return paths, nil
}

// ModuleDir is the module cache folder of a module at the version go.mod selects, downloading
// it when the cache lacks it.
func ModuleDir(module string) (string, error) {
	for _, args := range [][]string{{"list", "-m", "-json", module}, {"mod", "download", "-json", module}} {
		cmd := exec.Command("go", args...)
		cmd.Dir = testenv.RepoRoot()
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return "", fmt.Errorf("go %v: %v: %s", args, err, stderr.String())
		}
		var m struct{ Dir string }
		if err := json.Unmarshal(out, &m); err != nil {
			return "", fmt.Errorf("go %v: %w", args, err)
		}
		if m.Dir != "" {
			return m.Dir, nil
		}
	}
	return "", fmt.Errorf("module %s is not in the module cache and could not be downloaded", module)
}
