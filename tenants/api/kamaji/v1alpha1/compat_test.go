package v1alpha1_test

import (
	"os"
	"path/filepath"
	"sort"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/cozystack/etcd-operator/internal/testenv"
)

// Our Kamaji types are a hand-written subset of Kamaji's API; this checks each field we type against
// Kamaji's real CRDs (kept beside the clone in ../shared, which CI has and a fresh clone may not):
// same path, same type and format, same scope and names.

func TestKamajiFieldsMatchUpstream(t *testing.T) {
	shared, ok := testenv.SharedDir()
	if !ok {
		t.Skipf("Kamaji's CRDs not found: %s is absent (it sits beside the clone in CI)", shared)
	}
	upstreamDir := filepath.Join(shared, "crds", "kamaji")
	if _, err := os.Stat(upstreamDir); err != nil {
		t.Skipf("Kamaji's CRDs not found in %s: %v", upstreamDir, err)
	}
	for _, file := range []string{"kamaji.clastix.io_datastores.yaml", "kamaji.clastix.io_tenantcontrolplanes.yaml"} {
		t.Run(file, func(t *testing.T) {
			ours := readCRD(t, filepath.Join(testenv.FixtureCRDDir("kamaji"), file))
			theirs := readCRD(t, filepath.Join(upstreamDir, file))
			if ours.Spec.Scope != theirs.Spec.Scope {
				t.Errorf("scope %s, Kamaji has %s", ours.Spec.Scope, theirs.Spec.Scope)
			}
			if ours.Spec.Names.Kind != theirs.Spec.Names.Kind || ours.Spec.Names.Plural != theirs.Spec.Names.Plural {
				t.Errorf("names %+v, Kamaji has %+v", ours.Spec.Names, theirs.Spec.Names)
			}
			want := fields(schemaOf(t, theirs))
			got := fields(schemaOf(t, ours))
			if len(got) < 10 {
				t.Fatalf("only %d fields in our CRD: is it generated?", len(got))
			}
			var paths []string
			for p := range got {
				paths = append(paths, p)
			}
			sort.Strings(paths)
			for _, p := range paths {
				up, ok := want[p]
				switch {
				case !ok:
					t.Errorf("%s: not in Kamaji's CRD", p)
				case up != got[p]:
					t.Errorf("%s: type %s, Kamaji has %s", p, got[p], up)
				}
			}
		})
	}
}

func readCRD(t *testing.T, path string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run make manifests)", err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(raw, crd); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return crd
}

func schemaOf(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	for _, v := range crd.Spec.Versions {
		if v.Name == "v1alpha1" && v.Schema != nil {
			return v.Schema.OpenAPIV3Schema
		}
	}
	t.Fatalf("%s has no v1alpha1 schema", crd.Name)
	return nil
}

// fields maps every property path under spec and status to "type/format".
func fields(root *apiextensionsv1.JSONSchemaProps) map[string]string {
	out := map[string]string{}
	var walk func(path string, s *apiextensionsv1.JSONSchemaProps)
	walk = func(path string, s *apiextensionsv1.JSONSchemaProps) {
		out[path] = s.Type + "/" + s.Format
		for name, p := range s.Properties {
			walk(path+"."+name, &p)
		}
		if s.Items != nil && s.Items.Schema != nil {
			walk(path+"[]", s.Items.Schema)
		}
	}
	for _, top := range []string{"spec", "status"} {
		if p, ok := root.Properties[top]; ok {
			walk(top, &p)
		}
	}
	return out
}
