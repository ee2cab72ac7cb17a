package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/cozystack/etcd-operator/internal/testenv"
)

func TestTenantSchemaAllowsCozystackKeys(t *testing.T) {
	out, err := tenantSchema([]byte(`{"type":"object","additionalProperties":false,"properties":{"big":{"type":"integer","maximum":8589934592123}}}`))
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Properties map[string]struct{ Type string } `json:"properties"`
	}
	if err := json.Unmarshal(out, &s); err != nil {
		t.Fatal(err)
	}
	for key := range cozyKeys {
		if s.Properties[key].Type != "object" {
			t.Errorf("%s was not added as an object: %s", key, out)
		}
	}
	if !strings.Contains(string(out), "8589934592123") {
		t.Errorf("a large number was rounded: %s", out)
	}
	if _, err := tenantSchema([]byte(`{"properties":{"_cluster":{"type":"string"}}}`)); err == nil {
		t.Error("a chart value _cluster that is not an object must be refused")
	}
}

func TestAppSchemaDropsCozystackKeys(t *testing.T) {
	got, err := appSchema([]byte("{\n \"properties\": {\"a\": {\"pattern\": \"^<x>&$\"}, \"_cluster\": {}, \"_namespace\": {}}\n}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"properties":{"a":{"pattern":"^<x>&$"}}}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestKeysOrderFollowsValuesFile(t *testing.T) {
	got, err := keysOrder([]byte("replicas: 3\nstorage:\n  size: 1Gi\n  medium: \"\"\n_cluster: {}\nversion: x\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"apiVersion"}, {"appVersion"}, {"kind"}, {"metadata"}, {"metadata", "name"}, {"spec"},
		{"spec", "replicas"}, {"spec", "storage"}, {"spec", "storage", "size"}, {"spec", "storage", "medium"}, {"spec", "version"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
}

// TestRunOnACopy runs the generator on a copy of the repository's charts and packages and checks
// what each package gets: the operator chart without its CRDs, the CRDs alone, the tenant chart's
// templates beside the package's own (a stale copy removed), and an ApplicationDefinition whose
// schema is the chart's.
func TestRunOnACopy(t *testing.T) {
	repo := testenv.RepoRoot()
	root := t.TempDir()
	for _, dir := range []string{operatorChart, etcdChart, tenantPackage + "/logos"} {
		if err := copyTree(filepath.Join(repo, dir), filepath.Join(root, dir), nil); err != nil {
			t.Fatal(err)
		}
	}
	// copyTree refuses the package's own (reserved-prefix) templates; copy them by hand.
	own, _ := filepath.Glob(filepath.Join(repo, tenantPackage, "templates", ownPrefix+"*"))
	own = append(own, filepath.Join(repo, tenantPackage, ownDefaultsFile), filepath.Join(repo, tenantPackage, ownValuesFile),
		filepath.Join(repo, operatorPackage, ownDefaultsFile))
	for _, f := range own {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(repo, f)
		mustWrite(t, filepath.Join(root, rel), raw)
	}
	mustWrite(t, filepath.Join(root, tenantPackage, "templates", "removed-from-chart.yaml"), []byte("stale"))
	if err := run(root); err != nil {
		t.Fatal(err)
	}
	exists := func(p string) bool { _, err := os.Stat(filepath.Join(root, p)); return err == nil }
	for p, want := range map[string]bool{
		operatorPackage + "/templates/deployment.yaml":                           true,
		operatorPackage + "/files/alerts/rules.yaml":                             true,
		operatorPackage + "/values.schema.json":                                  true,
		operatorPackage + "/crds":                                                false,
		operatorPackage + "/charts":                                              false,
		crdsPackage + "/files/crds/etcd-operator.cozystack.io_etcdclusters.yaml": true,
		tenantPackage + "/templates/etcdcluster.yaml":                            true,
		tenantPackage + "/templates/cozystack-guard.yaml":                        true,
		tenantPackage + "/templates/removed-from-chart.yaml":                     false,
		tenantPackage + "/values.schema.json":                                    true,
		rdPackage + "/cozyrds/etcd.yaml":                                         true,
	} {
		if exists(p) != want {
			t.Errorf("%s exists=%v, want %v", p, !want, want)
		}
	}
	raw, err := os.ReadFile(filepath.Join(root, rdPackage, "cozyrds", "etcd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var def appDef
	if err := yaml.UnmarshalStrict(raw, &def); err != nil {
		t.Fatal(err)
	}
	var schema map[string]any
	if err := json.Unmarshal([]byte(def.Spec.Application.OpenAPISchema), &schema); err != nil {
		t.Fatalf("openAPISchema is not JSON: %v", err)
	}
	props, _ := schema["properties"].(map[string]any)
	if props["replicas"] == nil || props["_cluster"] != nil {
		t.Errorf("openAPISchema must hold the chart's values and not Cozystack's own keys; has %d properties", len(props))
	}
	ds, _ := props["dataStore"].(map[string]any)["properties"].(map[string]any)["enabled"].(map[string]any)
	if ds["default"] != true {
		t.Errorf("openAPISchema default of dataStore.enabled is %v, want the package's true", ds["default"])
	}
	// The backup values reach the dashboard, S3 credentials only as a Secret's name.
	dig := func(m map[string]any, path ...string) map[string]any {
		for _, k := range path {
			m, _ = m["properties"].(map[string]any)[k].(map[string]any)
		}
		return m
	}
	creds := dig(schema, "backup", "s3", "credentials")
	if dig(schema, "backup", "schedule") == nil || dig(schema, "quorumLoss") == nil || dig(creds, "secretName") == nil {
		t.Errorf("openAPISchema lacks backup.schedule, quorumLoss or backup.s3.credentials.secretName")
	}
	if dig(creds, "accessKeyId") != nil || dig(creds, "secretAccessKey") != nil {
		t.Errorf("openAPISchema offers inline S3 keys, which the package leaves out: %v", creds)
	}
	if def.Spec.Dashboard.Icon == "" || !def.Spec.Dashboard.Module || def.Spec.Release.ChartRef.Kind != "ExternalArtifact" {
		t.Errorf("dashboard metadata incomplete: %+v", def.Spec.Dashboard)
	}
}

func TestCopyRefusesReservedNames(t *testing.T) {
	src := t.TempDir()
	mustWrite(t, filepath.Join(src, ownPrefix+"x.yaml"), []byte("x"))
	if err := copyTree(src, t.TempDir(), nil); err == nil || !strings.Contains(err.Error(), "reserved") {
		t.Fatalf("got %v, want the reserved-prefix error", err)
	}
}

func mustWrite(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := writeFile(path, data); err != nil {
		t.Fatal(err)
	}
}
