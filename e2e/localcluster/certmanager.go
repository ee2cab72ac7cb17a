package localcluster

import (
	"fmt"
	"os"
	"path/filepath"
)

// CertManagerTools are cert-manager's controller binary and CRD folder in the tools cache,
// built by `hack/tools.sh cert-manager` from the project's wrapper module.
type CertManagerTools struct {
	Version    string
	Controller string // the controller binary
	CRDs       string // folder of cert-manager's CRD manifests of the same version
}

// ResolveCertManager finds cert-manager's tools for o (its ToolsDir and ModuleRoot defaults
// apply) at the version hack/versions.env pins.
func ResolveCertManager(o Options) (CertManagerTools, error) {
	o, err := o.withDefaults()
	if err != nil {
		return CertManagerTools{}, err
	}
	v := toolVersions(o.ModuleRoot)["CERT_MANAGER_VERSION"]
	dir := filepath.Join(o.ToolsDir, "cert-manager-"+v)
	t := CertManagerTools{Version: v, Controller: filepath.Join(dir, "cert-manager-controller"), CRDs: filepath.Join(dir, "crds")}
	for _, p := range []string{t.Controller, t.CRDs} {
		if _, err := os.Stat(p); err != nil {
			return t, fmt.Errorf("cert-manager %s missing from the tools cache (run `make tools`): %w", v, err)
		}
	}
	return t, nil
}
