package charts_test

import (
	"os"
	"path/filepath"
	"sort"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

// opaqueFields are EtcdCluster spec fields the chart passes through whole from one value
// (Kubernetes core types and free-form maps); their inner fields are Kubernetes', not ours.
var opaqueFields = map[string]bool{
	"spec.resources": true, "spec.affinity": true, "spec.tolerations": true,
	"spec.topologySpreadConstraints": true, "spec.imagePullSecrets": true, "spec.nodeSelector": true,
	"spec.additionalMetadata.labels": true, "spec.additionalMetadata.annotations": true,
}

// TestEveryEtcdClusterFieldIsReachable: each field of the EtcdCluster spec (as the generated CRD
// has it) is set by at least one case of the etcd chart's value matrix, so every field is
// exposed as a value and a new API field without one fails here.
func TestEveryEtcdClusterFieldIsReachable(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("etcd-operator", "crds", "etcd-operator.cozystack.io_etcdclusters.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(raw, crd); err != nil {
		t.Fatal(err)
	}
	var spec *apiextensionsv1.JSONSchemaProps
	for _, v := range crd.Spec.Versions {
		if v.Name == v1alpha2.GroupVersion.Version {
			s := v.Schema.OpenAPIV3Schema.Properties["spec"]
			spec = &s
		}
	}
	if spec == nil {
		t.Fatalf("CRD has no %s spec", v1alpha2.GroupVersion.Version)
	}
	want := map[string]bool{}
	schemaLeaves("spec", spec, want)

	set := map[string]bool{}
	for _, tc := range etcdCases {
		ms := render(t, etcdChart, etcdRelease, etcdNamespace, tc.values)
		u := one(t, ms, "EtcdCluster")
		valueLeaves("spec", u.Object["spec"], set)
	}
	var missing []string
	for p := range want {
		if !set[p] {
			missing = append(missing, p)
		}
	}
	sort.Strings(missing)
	if len(want) < 40 {
		t.Fatalf("only %d spec fields found in the CRD", len(want))
	}
	for _, p := range missing {
		t.Errorf("%s: no case of the etcd chart's value matrix sets it (expose it as a value and add a case)", p)
	}
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
