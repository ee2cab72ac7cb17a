package localcluster

import (
	"fmt"
	"os"
	"path/filepath"
)

// ResolvePrometheus finds the Prometheus server in the tools cache of o (its ToolsDir and
// ModuleRoot defaults apply) at the version hack/versions.env pins.
func ResolvePrometheus(o Options) (string, error) {
	o, err := o.withDefaults()
	if err != nil {
		return "", err
	}
	version := toolVersions(o.ModuleRoot)["PROMETHEUS_VERSION"]
	bin := filepath.Join(o.ToolsDir, "prometheus-"+version, "prometheus")
	if _, err := os.Stat(bin); err != nil {
		return bin, fmt.Errorf("prometheus %s missing from the tools cache (run `make tools`): %w", version, err)
	}
	return bin, nil
}
