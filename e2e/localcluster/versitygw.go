package localcluster

import (
	"fmt"
	"os"
	"path/filepath"
)

// ResolveVersitygw finds the versitygw S3 server in the tools cache of o (its ToolsDir and
// ModuleRoot defaults apply) at the version hack/versions.env pins, and returns the binary
// and that version.
func ResolveVersitygw(o Options) (bin, version string, err error) {
	o, err = o.withDefaults()
	if err != nil {
		return "", "", err
	}
	version = toolVersions(o.ModuleRoot)["VERSITYGW_VERSION"]
	bin = filepath.Join(o.ToolsDir, "versitygw-"+version, "versitygw")
	if _, err := os.Stat(bin); err != nil {
		return bin, version, fmt.Errorf("versitygw %s missing from the tools cache (run `make tools`): %w", version, err)
	}
	return bin, version, nil
}
