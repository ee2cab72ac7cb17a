package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"
)

// cozyKeys are the values keys Cozystack merges into every app's HelmRelease from the
// cozystack-values Secret of the namespace: _cluster (platform-wide settings) and _namespace
// (per-tenant ones such as which namespace holds the tenant's etcd).
var cozyKeys = map[string]string{
	"_cluster":   "Platform-wide settings, merged in by Cozystack from the cozystack-values Secret; not set by users.",
	"_namespace": "Per-tenant settings (e.g. _namespace.etcd, the namespace whose etcd serves this tenant), merged in by Cozystack from the cozystack-values Secret; not set by users.",
}

// tenantSchema is the chart's values schema with the Cozystack keys allowed at the top level
// (added when the chart lacks them): the chart rejects unknown keys, and Cozystack always passes
// these two.
func tenantSchema(chartSchema []byte) ([]byte, error) { return withObjectKeys(chartSchema, cozyKeys) }

// withObjectKeys allows the given top-level keys as objects, keeping a chart's own definition
// when it is an object already.
func withObjectKeys(chartSchema []byte, keys map[string]string) ([]byte, error) {
	s, props, err := parseSchema(chartSchema)
	if err != nil {
		return nil, err
	}
	for key, doc := range keys {
		if p, ok := props[key].(map[string]any); ok {
			if p["type"] != "object" {
				return nil, fmt.Errorf("value %q, which is set from outside the chart to an object, has type %v", key, p["type"])
			}
			continue
		}
		props[key] = map[string]any{"type": "object", "description": doc}
	}
	return encode(s, "  ")
}

// appSchema is the schema the dashboard builds its form from: the chart's, minified, without the
// keys Cozystack sets itself, and without "$schema": cozystack-api builds a structural schema from
// it, refuses that keyword, and then serves the app with no defaulting at all.
func appSchema(chartSchema []byte) (string, error) {
	s, props, err := parseSchema(chartSchema)
	if err != nil {
		return "", err
	}
	delete(s, "$schema")
	for key := range cozyKeys {
		delete(props, key)
	}
	out, err := encode(s, "")
	return string(bytes.TrimSpace(out)), err
}

// encode writes JSON without HTML escaping: schemas hold patterns with < > &, and the dashboard
// shows descriptions as text.
func encode(v any, indent string) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", indent)
	err := enc.Encode(v)
	return b.Bytes(), err
}

// parseSchema keeps numbers as written (json.Number), so re-encoding cannot round them.
func parseSchema(raw []byte) (map[string]any, map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var s map[string]any
	if err := dec.Decode(&s); err != nil {
		return nil, nil, err
	}
	props, ok := s["properties"].(map[string]any)
	if !ok {
		return nil, nil, fmt.Errorf("no top-level properties")
	}
	return s, props, nil
}

// The ApplicationDefinition (cozystack.io/v1alpha1), with only the fields this package sets.
type appDef struct {
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"`
	Metadata   objectMeta `json:"metadata"`
	Spec       appDefSpec `json:"spec"`
}

type objectMeta struct {
	Name string `json:"name"`
}

type appDefSpec struct {
	Application application `json:"application"`
	Release     release     `json:"release"`
	Dashboard   dashboard   `json:"dashboard"`
	Services    selectors   `json:"services"`
}

type application struct {
	Kind          string `json:"kind"`
	Plural        string `json:"plural"`
	Singular      string `json:"singular"`
	OpenAPISchema string `json:"openAPISchema"`
}

type release struct {
	Prefix   string            `json:"prefix"`
	Labels   map[string]string `json:"labels"`
	ChartRef chartRef          `json:"chartRef"`
}

type chartRef struct {
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
}

type dashboard struct {
	Category    string     `json:"category"`
	Singular    string     `json:"singular"`
	Plural      string     `json:"plural"`
	Name        string     `json:"name"`
	Description string     `json:"description"`
	Module      bool       `json:"module"`
	Icon        string     `json:"icon"`
	Tabs        []string   `json:"tabs"`
	Tags        []string   `json:"tags"`
	Weight      int        `json:"weight"`
	KeysOrder   [][]string `json:"keysOrder"`
}

type selectors struct {
	Include []selector `json:"include"`
}

type selector struct {
	ResourceNames []string `json:"resourceNames"`
}

// buildApplicationDefinition puts etcd in the dashboard as a tenant module (switched on by the
// Tenant's etcd flag, category Administration), installed from the package's ExternalArtifact
// with the names Cozystack's platform gives it.
func buildApplicationDefinition(description string, schema, valuesYAML, icon []byte) (*appDef, error) {
	openAPISchema, err := appSchema(schema)
	if err != nil {
		return nil, fmt.Errorf("values.schema.json: %w", err)
	}
	keys, err := keysOrder(valuesYAML)
	if err != nil {
		return nil, err
	}
	return &appDef{
		APIVersion: "cozystack.io/v1alpha1",
		Kind:       "ApplicationDefinition",
		Metadata:   objectMeta{Name: "etcd"},
		Spec: appDefSpec{
			Application: application{Kind: "Etcd", Plural: "etcds", Singular: "etcd", OpenAPISchema: openAPISchema},
			Release: release{
				Prefix: "",
				Labels: map[string]string{
					"sharding.fluxcd.io/key":             "tenants",
					"internal.cozystack.io/tenantmodule": "true",
				},
				ChartRef: chartRef{Kind: "ExternalArtifact", Name: "cozystack-etcd-application-default-etcd", Namespace: "cozy-system"},
			},
			Dashboard: dashboard{
				Category: "Administration", Singular: "Etcd", Plural: "Etcd", Name: "etcd",
				Description: description, Module: true,
				Icon:      base64.StdEncoding.EncodeToString(icon),
				Tabs:      []string{"workloads", "services", "secrets", "yaml"},
				Tags:      []string{"datastore", "etcd", "kamaji"},
				Weight:    10,
				KeysOrder: keys,
			},
			// The client Service is what tenants' control planes connect to; Secrets hold keys and
			// stay off the page.
			Services: selectors{Include: []selector{{ResourceNames: []string{"etcd"}}}},
		},
	}, nil
}

// keysOrder lists the app object's fields in the order the dashboard shows them: the object's
// own, then spec with every value of values.yaml two levels deep, in the file's order.
func keysOrder(valuesYAML []byte) ([][]string, error) {
	var doc yamlv3.Node
	if err := yamlv3.Unmarshal(valuesYAML, &doc); err != nil {
		return nil, fmt.Errorf("values.yaml: %w", err)
	}
	out := [][]string{{"apiVersion"}, {"appVersion"}, {"kind"}, {"metadata"}, {"metadata", "name"}, {"spec"}}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yamlv3.MappingNode {
		return nil, fmt.Errorf("values.yaml is not a mapping")
	}
	top := doc.Content[0]
	for i := 0; i+1 < len(top.Content); i += 2 {
		key, val := top.Content[i].Value, top.Content[i+1]
		if _, cozy := cozyKeys[key]; cozy {
			continue
		}
		out = append(out, []string{"spec", key})
		if val.Kind != yamlv3.MappingNode {
			continue
		}
		for j := 0; j+1 < len(val.Content); j += 2 {
			out = append(out, []string{"spec", key, val.Content[j].Value})
		}
	}
	return out, nil
}

func writeApplicationDefinition(root string) error {
	chart := filepath.Join(root, etcdChart)
	m, err := readChartMeta(chart)
	if err != nil {
		return err
	}
	read := func(p string) ([]byte, error) { return os.ReadFile(filepath.Join(root, p)) }
	// The package's (written by syncTenant): the chart's with the package's own defaults.
	schema, err := read(tenantPackage + "/values.schema.json")
	if err != nil {
		return err
	}
	values, err := read(tenantPackage + "/values.yaml")
	if err != nil {
		return err
	}
	icon, err := read(tenantPackage + "/logos/etcd.svg")
	if err != nil {
		return err
	}
	def, err := buildApplicationDefinition(m.Description, schema, values, icon)
	if err != nil {
		return err
	}
	out, err := yaml.Marshal(def)
	if err != nil {
		return err
	}
	return writeFile(filepath.Join(root, rdPackage, "cozyrds", "etcd.yaml"), append([]byte(generatedHeader("#")), out...))
}
