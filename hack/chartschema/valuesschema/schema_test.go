package valuesschema

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	chartutil "helm.sh/helm/v4/pkg/chart/common/util"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite testdata/sample.schema.json")

const sampleValues = `## @section Cluster
## @param {integer,min:0} replicas - Members.
replicas: 3
## @param {object} storage - Data volume.
## @param {quantity} storage.size - Size.
## @param {string,enum:|Memory} storage.medium - Medium.
storage:
  size: 1Gi
  medium: ""
## @param {object} affinity - Free-form affinity.
affinity: {}
## @param {object,values:string} labels - Labels.
labels: {}
## @param {array,items:string} names - Names.
names: [a]
`

func TestGenerateSchema(t *testing.T) {
	out, err := Generate("sample", []byte(sampleValues))
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "sample.schema.json")
	if *update {
		if err := os.WriteFile(golden, out.Schema, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if string(out.Schema) != string(want) {
		t.Fatalf("schema differs from testdata/sample.schema.json:\n%s", out.Schema)
	}
}

// The generated schema must accept the defaults and good overrides, and reject bad ones with a
// message naming the offending key.
func TestSchemaValidates(t *testing.T) {
	out, err := Generate("sample", []byte(sampleValues))
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct{ values, wantErr string }{
		"defaults":           {values: "replicas: 3"},
		"quantity as int":    {values: "storage: {size: 1073741824}"},
		"free-form object":   {values: "affinity: {nodeAffinity: {x: 1}}"},
		"negative replicas":  {values: "replicas: -1", wantErr: "/replicas"},
		"string replicas":    {values: "replicas: three", wantErr: "want integer"},
		"unknown top key":    {values: "replica: 3", wantErr: "additional properties 'replica' not allowed"},
		"unknown nested key": {values: "storage: {sizee: 1Gi}", wantErr: "additional properties 'sizee' not allowed"},
		"bad enum":           {values: "storage: {medium: Disk}", wantErr: "/storage/medium"},
		"bad quantity":       {values: "storage: {size: lots}", wantErr: "/storage/size"},
		"map value type":     {values: "labels: {a: 1}", wantErr: "/labels/a"},
		"array item type":    {values: "names: [1]", wantErr: "/names/0"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			vals := map[string]any{}
			if err := yaml.Unmarshal([]byte(tc.values), &vals); err != nil {
				t.Fatal(err)
			}
			err := chartutil.ValidateAgainstSingleSchema(vals, out.Schema)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("rejected: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

func TestGenerateErrors(t *testing.T) {
	cases := map[string]struct{ values, want string }{
		"undocumented value": {"## @param {integer} a - A.\na: 1\nb: 2\n", "b is in values.yaml but has no `## @param` annotation"},
		"undocumented field": {"## @param {string} s.a - A.\ns: {a: x, b: y}\n", "s.b is in values.yaml but has no"},
		"missing value":      {"## @param {integer} a - A.\n## @param {string} b - B.\na: 1\n", "b is declared but missing from values.yaml"},
		"declared twice":     {"## @param {integer} a - A.\n## @param {integer} a - A.\na: 1\n", "a is declared twice"},
		"fields under leaf":  {"## @param {string} a - A.\n## @param {string} a.b - B.\na: {b: x}\n", "a is string but has declared fields"},
		"fields under value": {"## @param {string} a.b - B.\na: x\n", "a has declared fields but its value in values.yaml is string"},
		"default off-type":   {"## @param {integer} a - A.\na: x\n", "values.yaml does not satisfy its own schema"},
		"default off-enum":   {"## @param {string,enum:x|y} a - A.\na: z\n", "values.yaml does not satisfy its own schema"},
		"numeric enum typo":  {"## @param {integer,enum:1|two} a - A.\na: 1\n", `enum value "two" is not a integer`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Generate("x", []byte(tc.values))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}
