// Command cozypackages writes the generated parts of the Cozystack packages in packages/ from the
// charts in charts/, so the packages can never drift from the charts they wrap. `make manifests`
// runs it after the charts' own generators; `make verify` fails when its output is stale.
//
// How each package wraps its chart follows what Cozystack does (see packages/README.md):
//
//   - system/etcd-operator: charts/etcd-operator's templates and files copied into the package
//     (plain files, no symlinks, so the package is self-contained when Cozystack packs it), under
//     the chart's own name, its values and schema from the chart's plus cozystack-defaults.yaml.
//     Not a subchart: Cozystack merges _cluster into the top level of the values, which a subchart
//     would not see. The CRDs are left out of the copy: they ship in system/etcd-operator-crds, as
//     templates, so that upgrades update them (Helm never upgrades a chart's crds/) and uninstalls
//     keep them.
//   - extra/etcd: a tenant app's values are the top level of its HelmRelease (the dashboard writes
//     the app's spec there), which a subchart cannot receive, so the chart's templates, files (its
//     per-cluster alert rules) and values are copied into the package itself, beside the package's own cozystack-* templates. Its
//     values.schema.json is the chart's plus the _namespace/_cluster keys that Cozystack merges in
//     from the cozystack-values Secret. The package's own cozystack-defaults.yaml overrides chart
//     defaults (in values.yaml and the schemas' defaults) where Cozystack needs other ones.
//   - system/etcd-rd: the ApplicationDefinition, with the openAPISchema taken from the chart's
//     values.schema.json and the icon from extra/etcd/logos.
//
// Usage: go run ./hack/cozypackages [-root .]
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	root := flag.String("root", ".", "repository root")
	flag.Parse()
	if err := run(*root); err != nil {
		fmt.Fprintln(os.Stderr, "cozypackages:", err)
		os.Exit(1)
	}
}

func run(root string) error {
	for _, step := range []func(string) error{syncOperator, syncCRDs, syncTenant, writeApplicationDefinition} {
		if err := step(root); err != nil {
			return err
		}
	}
	return nil
}
