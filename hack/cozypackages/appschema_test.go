package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	internalapiext "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/cozystack/etcd-operator/internal/testenv"
)

// cozystack-api turns the ApplicationDefinition's openAPISchema into a structural schema (v1
// JSONSchemaProps, converted to the internal type) to default each app's spec; when that fails it
// serves the app with no defaulting at all. The committed definition must pass that step, and
// defaulting an empty spec must give the package's defaults (a Tenant's etcd app has no values).
func TestApplicationDefinitionSchemaIsStructural(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), rdPackage, "cozyrds", "etcd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var def appDef
	if err := yaml.Unmarshal(raw, &def); err != nil {
		t.Fatal(err)
	}
	var v1js apiextv1.JSONSchemaProps
	if err := json.Unmarshal([]byte(def.Spec.Application.OpenAPISchema), &v1js); err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	if err := internalapiext.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := apiextv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	var internal internalapiext.JSONSchemaProps
	if err := scheme.Convert(&v1js, &internal, nil); err != nil {
		t.Fatal(err)
	}
	s, err := structuralschema.NewStructural(&internal)
	if err != nil {
		t.Fatalf("cozystack-api cannot build a structural schema from openAPISchema (the app would get no defaults): %v", err)
	}
	spec := map[string]any{}
	structuraldefaulting.Default(spec, s)
	if spec["size"] != "4Gi" || spec["replicas"] != int64(3) {
		t.Errorf("an empty spec defaults to size %v, replicas %v; want the package's 4Gi and 3", spec["size"], spec["replicas"])
	}
}
