// Command chartschema writes a chart's values.schema.json and the parameter table of its
// README.md from the typed `## @param {type} path - description` annotations in values.yaml, so
// neither can drift from the values. `make manifests` runs it; `make verify` checks the output.
// The annotation grammar is documented in docs/development.md.
//
// Usage: go run ./hack/chartschema CHART_DIR...
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	chartutil "helm.sh/helm/v4/pkg/chart/common/util"
	"sigs.k8s.io/yaml"
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

// Output is what generate writes for one chart.
type Output struct {
	Schema []byte
	Table  string
}

// Generate builds the schema and README table of a chart from its values.yaml and checks that
// the values.yaml defaults satisfy the schema (with the validator Helm itself uses).
func Generate(chartName string, valuesYAML []byte) (Output, error) {
	sections, err := ParseAnnotations(valuesYAML)
	if err != nil {
		return Output{}, err
	}
	var params []Param
	for _, s := range sections {
		params = append(params, s.Params...)
	}
	values := map[string]any{}
	if err := yaml.Unmarshal(valuesYAML, &values); err != nil {
		return Output{}, fmt.Errorf("values.yaml: %w", err)
	}
	schema, err := BuildSchema(chartName+" values", params, values)
	if err != nil {
		return Output{}, err
	}
	compact, err := json.Marshal(schema)
	if err != nil {
		return Output{}, err
	}
	raw, err := Pretty(compact)
	if err != nil {
		return Output{}, err
	}
	if err := chartutil.ValidateAgainstSingleSchema(values, raw); err != nil {
		return Output{}, fmt.Errorf("values.yaml does not satisfy its own schema:\n%w", err)
	}
	table, err := ParamTable(sections, values)
	if err != nil {
		return Output{}, err
	}
	return Output{Schema: raw, Table: table}, nil
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
	out, err := Generate(meta.Name, valuesYAML)
	if err != nil {
		return nil, "", err
	}
	readmePath := filepath.Join(dir, "README.md")
	old, err := os.ReadFile(readmePath)
	if err != nil {
		return nil, "", err
	}
	readme, err = ReplaceTable(string(old), out.Table)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", readmePath, err)
	}
	return out.Schema, readme, nil
}
