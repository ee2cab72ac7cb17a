// Package valuesschema builds a chart's values.schema.json and README parameter table from the
// typed `## @param {type} path - description` annotations of its values.yaml (grammar in
// docs/development.md). hack/chartschema writes them for the charts; hack/cozypackages builds the
// tenant package's schema from the package's own values.yaml with it.
package valuesschema

import (
	"encoding/json"
	"fmt"

	chartutil "helm.sh/helm/v4/pkg/chart/common/util"
	"sigs.k8s.io/yaml"
)

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
