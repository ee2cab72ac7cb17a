// Command chartschema writes a chart's values.schema.json and the parameter table of its
// README.md from the typed `## @param {type} path - description` annotations in values.yaml, so
// neither can drift from the values. `make manifests` runs it; `make verify` checks the output.
// The annotation grammar is documented in docs/development.md.
//
// Usage: go run ./hack/chartschema CHART_DIR...
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"

	"github.com/cozystack/etcd-operator/hack/chartschema/valuesschema"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: chartschema CHART_DIR...")
		os.Exit(2)
	}
	for _, dir := range os.Args[1:] {
		if err := generate(dir); err != nil {
			fmt.Fprintf(os.Stderr, "chartschema: %s: %v\n", dir, err)
			os.Exit(1)
		}
	}
}

func generate(dir string) error {
	schema, readme, err := plan(dir)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "values.schema.json"), schema, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "README.md"), []byte(readme), 0o644)
}

// plan returns the schema and the updated README of the chart in dir, writing nothing.
func plan(dir string) (schema []byte, readme string, err error) {
	meta := struct {
		Name string `json:"name"`
	}{}
	chartYAML, err := os.ReadFile(filepath.Join(dir, "Chart.yaml"))
	if err != nil {
		return nil, "", err
	}
	if err := yaml.Unmarshal(chartYAML, &meta); err != nil {
		return nil, "", fmt.Errorf("reading Chart.yaml: %w", err)
	}
	valuesYAML, err := os.ReadFile(filepath.Join(dir, "values.yaml"))
	if err != nil {
		return nil, "", err
	}
	out, err := valuesschema.Generate(meta.Name, valuesYAML)
	if err != nil {
		return nil, "", err
	}
	readmePath := filepath.Join(dir, "README.md")
	old, err := os.ReadFile(readmePath)
	if err != nil {
		return nil, "", err
	}
	readme, err = valuesschema.ReplaceTable(string(old), out.Table)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", readmePath, err)
	}
	return out.Schema, readme, nil
}
