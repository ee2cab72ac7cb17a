package chartrender

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeChart lays out a minimal chart: files maps a path inside the chart to its content.
func writeChart(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	base := map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: demo\nversion: 0.1.0\n",
		"values.yaml": "replicas: 1\n",
	}
	for k, v := range files {
		base[k] = v
	}
	for name, content := range base {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const configMaps = `{{- range until (int .Values.replicas) }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: cm-{{ . }}
  namespace: {{ $.Release.Namespace }}
data:
  release: {{ $.Release.Name }}
  replicas: "{{ $.Values.replicas }}"
{{- end }}
---
# an empty document, as a disabled template leaves
`

func TestRenderOrderAndNumbers(t *testing.T) {
	dir := writeChart(t, map[string]string{
		"templates/b.yaml":       configMaps,
		"templates/a.yaml":       "apiVersion: v1\nkind: Service\nmetadata: {name: svc}\nspec: {ports: [{port: 80}]}\n",
		"templates/_helpers.tpl": `{{- define "x" }}kind: Ignored{{ end }}`,
		"templates/NOTES.txt":    "not an object",
	})
	objs, err := Render(dir, map[string]any{"replicas": 2}, "ns")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range objs {
		names = append(names, o.GetKind()+"/"+o.GetName())
	}
	if got := strings.Join(names, " "); got != "Service/svc ConfigMap/cm-0 ConfigMap/cm-1" {
		t.Fatalf("objects = %s", got)
	}
	if objs[1].GetNamespace() != "ns" || objs[1].Object["data"].(map[string]any)["release"] != "demo" {
		t.Errorf("release name or namespace not applied: %v", objs[1].Object)
	}
	// Whole numbers decode as int64, as in objects read from the apiserver.
	port := objs[0].Object["spec"].(map[string]any)["ports"].([]any)[0].(map[string]any)["port"]
	if _, ok := port.(int64); !ok {
		t.Errorf("port decoded as %T, want int64", port)
	}
}

func TestRenderErrors(t *testing.T) {
	cases := map[string]struct {
		files   map[string]string
		values  map[string]any
		wantErr string
	}{
		"schema": {
			files:   map[string]string{"values.schema.json": `{"type": "object", "properties": {"replicas": {"type": "integer"}}}`},
			values:  map[string]any{"replicas": "two"},
			wantErr: "/replicas",
		},
		"template fail": {
			files:   map[string]string{"templates/x.yaml": `{{ fail "replicas must be odd" }}`},
			wantErr: "replicas must be odd",
		},
		"kube version": {
			files:   map[string]string{"Chart.yaml": "apiVersion: v2\nname: demo\nversion: 0.1.0\nkubeVersion: '<1.20.0'\n"},
			wantErr: "requires kubeVersion <1.20.0",
		},
		"not an object": {
			files:   map[string]string{"templates/x.yaml": "just: a map\n"},
			wantErr: "templates/x.yaml: document 0 has no apiVersion or kind",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Render(writeChart(t, tc.files), tc.values, "ns")
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

func TestRenderCRDsFirst(t *testing.T) {
	dir := writeChart(t, map[string]string{
		"crds/thing.yaml":  "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: things.example.com}\n",
		"templates/a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
	})
	ms, err := RenderManifests(dir, nil, Options{Namespace: "ns", IncludeCRDs: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 || ms[0].Object.GetKind() != "CustomResourceDefinition" || ms[1].Source != "demo/templates/a.yaml" {
		t.Fatalf("manifests = %+v", ms)
	}
	without, err := Render(dir, nil, "ns")
	if err != nil || len(without) != 1 {
		t.Fatalf("without IncludeCRDs: %d objects, err %v", len(without), err)
	}
}
