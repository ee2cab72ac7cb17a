package charts_test

import (
	"os"
	"path/filepath"
	"sort"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/cozystack/etcd-operator/internal/chartrender"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

// opaqueFields are spec fields the chart passes through whole from one value
// (Kubernetes core types and free-form maps); their inner fields are Kubernetes', not ours.
var opaqueFields = map[string]bool{
	"spec.resources": true, "spec.affinity": true, "spec.tolerations": true,
	"spec.topologySpreadConstraints": true, "spec.imagePullSecrets": true, "spec.nodeSelector": true,
	"spec.additionalMetadata.labels": true, "spec.additionalMetadata.annotations": true,
}

// reachableKinds are the kinds of our API the etcd chart renders, with their CRD file: every spec
// field of each must be set by some case of the chart's value matrix.
var reachableKinds = []struct {
	kind, crd string
	minFields int // a sanity floor, so a CRD read wrongly cannot pass with nothing to check
}{
	{"EtcdCluster", "etcd-operator.cozystack.io_etcdclusters.yaml", 40},
	{"EtcdBackupSchedule", "etcd-operator.cozystack.io_etcdbackupschedules.yaml", 18},
}

// TestEverySpecFieldIsReachable: each field of the spec (as the generated CRD has it) of every
// kind the etcd chart renders is set by at least one case of its value matrix, so every field is
// exposed as a value and a new API field without one fails here.
func TestEverySpecFieldIsReachable(t *testing.T) {
	rendered := make([][]chartrender.Manifest, len(etcdCases))
	for i, tc := range etcdCases {
		rendered[i] = render(t, etcdChart, etcdRelease, etcdNamespace, tc.values)
	}
	for _, k := range reachableKinds {
		t.Run(k.kind, func(t *testing.T) {
			want := map[string]bool{}
			schemaLeaves("spec", crdSpec(t, k.crd), want)
			if len(want) < k.minFields {
				t.Fatalf("only %d spec fields found in %s", len(want), k.crd)
			}
			set := map[string]bool{}
			for _, ms := range rendered {
				for _, u := range objects(ms, k.kind) {
					valueLeaves("spec", u.Object["spec"], set)
				}
			}
			var missing []string
			for p := range want {
				if !set[p] {
					missing = append(missing, p)
				}
			}
			sort.Strings(missing)
			for _, p := range missing {
				t.Errorf("%s %s: no case of the etcd chart's value matrix sets it (expose it as a value and add a case)", k.kind, p)
			}
		})
	}
}

// crdSpec is the spec schema of our API version in a generated CRD.
func crdSpec(t *testing.T, file string) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("etcd-operator", "crds", file))
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(raw, crd); err != nil {
		t.Fatal(err)
	}
	for _, v := range crd.Spec.Versions {
		if v.Name == v1alpha2.GroupVersion.Version {
			s := v.Schema.OpenAPIV3Schema.Properties["spec"]
			return &s
		}
	}
	t.Fatalf("%s has no %s spec", file, v1alpha2.GroupVersion.Version)
	return nil
}

// schemaLeaves records the path of every leaf of s; objects with properties are descended
// into, opaque fields and everything else are leaves.
func schemaLeaves(path string, s *apiextensionsv1.JSONSchemaProps, out map[string]bool) {
	if s.Items != nil && s.Items.Schema != nil && !opaqueFields[path] {
		schemaLeaves(path, s.Items.Schema, out)
		return
	}
	if len(s.Properties) == 0 || opaqueFields[path] {
		out[path] = true
		return
	}
	for name, p := range s.Properties {
		schemaLeaves(path+"."+name, &p, out)
	}
}

// valueLeaves records the same paths for a rendered object (list items share their list's path).
func valueLeaves(path string, v any, out map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		if opaqueFields[path] || len(x) == 0 {
			out[path] = true
			return
		}
		for k, e := range x {
			valueLeaves(path+"."+k, e, out)
		}
	case []any:
		if opaqueFields[path] {
			out[path] = true
			return
		}
		for _, e := range x {
			valueLeaves(path, e, out)
		}
	default:
		out[path] = true
	}
}
