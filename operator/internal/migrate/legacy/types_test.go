package legacy_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	apiextensions "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/cozystack/etcd-operator/internal/testenv"
	"github.com/cozystack/etcd-operator/operator/internal/migrate/legacy"
)

// The manifests in testdata are shaped like the legacy project's examples and docs. They must
// decode strictly into our types (so no field of the legacy API is missing from them) and be
// accepted by the CRD generated from the types, as the apiserver would run it.

var manifests = []string{
	"manifest-simple.yaml",
	"manifest-persistent.yaml",
	"manifest-tls-auth.yaml",
	"manifest-pod-template.yaml",
	"manifest-restore.yaml",
}

func readManifest(t *testing.T, name string) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func decodeStrict(t *testing.T, raw []byte) *legacy.EtcdCluster {
	t.Helper()
	c := &legacy.EtcdCluster{}
	if err := yaml.UnmarshalStrict(raw, c); err != nil {
		t.Fatalf("strict decoding: %v", err)
	}
	return c
}

func TestManifestsDecodeStrictly(t *testing.T) {
	for _, name := range manifests {
		t.Run(name, func(t *testing.T) { decodeStrict(t, readManifest(t, name)) })
	}
	t.Run("fields", func(t *testing.T) {
		c := decodeStrict(t, readManifest(t, "manifest-pod-template.yaml"))
		if got := legacy.Image(c); got != "quay.io/coreos/etcd:v3.5.17" {
			t.Errorf("image %q", got)
		}
		if c.Spec.PodDisruptionBudgetTemplate.Spec.MinAvailable.IntValue() != 2 {
			t.Errorf("pdb %+v", c.Spec.PodDisruptionBudgetTemplate.Spec)
		}
		tls := decodeStrict(t, readManifest(t, "manifest-tls-auth.yaml")).Spec.Security
		if !tls.EnableAuth || tls.TLS.ClientSecret != "etcd-client-tls" || tls.TLS.ServerTrustedCASecret != "etcd-ca-tls" {
			t.Errorf("security %+v", tls)
		}
		s3 := decodeStrict(t, readManifest(t, "manifest-restore.yaml")).Spec.Bootstrap.Restore.Source.S3
		if !s3.ForcePathStyle || s3.CredentialsSecretRef.Name != "s3-credentials" {
			t.Errorf("s3 %+v", s3)
		}
	})
}

// An unknown field fails: the security layout of pre-release legacy versions is not the API.
func TestStrictDecodingRefusesUnknownFields(t *testing.T) {
	raw := []byte("spec:\n  security:\n    peer:\n      ca:\n        secretName: ca-peer-secret\n")
	if err := yaml.UnmarshalStrict(raw, &legacy.EtcdCluster{}); err == nil || !strings.Contains(err.Error(), "peer") {
		t.Fatalf("want an unknown field error, got %v", err)
	}
}

func TestGeneratedCRDAcceptsManifests(t *testing.T) {
	schema := generatedSchema(t)
	structural, err := structuralschema.NewStructural(schema)
	if err != nil {
		t.Fatal(err)
	}
	validator, _, err := apiservervalidation.NewSchemaValidator(schema)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range manifests {
		t.Run(name, func(t *testing.T) {
			raw := readManifest(t, name)
			obj := map[string]any{}
			if err := yaml.Unmarshal(raw, &obj); err != nil {
				t.Fatal(err)
			}
			pruned := structuralpruning.PruneWithOptions(obj, structural, true,
				structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
			if len(pruned) > 0 {
				t.Errorf("the CRD would drop %v", pruned)
			}
			// Then the legacy webhook defaults, and the result is validated.
			c := decodeStrict(t, raw)
			legacy.Default(c)
			admitted := toJSONMap(t, c)
			structuraldefaulting.PruneNonNullableNullsWithoutDefaults(admitted, structural)
			structuraldefaulting.Default(admitted, structural)
			if errs := apiservervalidation.ValidateCustomResource(field.NewPath(""), admitted, validator); len(errs) > 0 {
				t.Errorf("refused: %v", errs.ToAggregate())
			}
		})
	}
	// The checks have teeth: an unknown field is reported as pruned.
	unknown := map[string]any{"spec": map[string]any{"storage": map[string]any{}, "version": "3.5"}}
	if pruned := structuralpruning.PruneWithOptions(unknown, structural, true,
		structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true}); !reflect.DeepEqual(pruned, []string{"spec.version"}) {
		t.Errorf("pruned %v, want spec.version", pruned)
	}
	// Without the webhook the smallest manifest lacks the required storage, in the legacy CRD
	// too: whoever creates legacy clusters without the legacy operator must run Default first.
	bare := map[string]any{}
	if err := yaml.Unmarshal(readManifest(t, "manifest-simple.yaml"), &bare); err != nil {
		t.Fatal(err)
	}
	if errs := apiservervalidation.ValidateCustomResource(nil, bare, validator); len(errs) == 0 {
		t.Error("spec without storage accepted")
	}
}

// generatedSchema is the v1alpha1 schema of the fixture CRD, in the apiserver's internal form.
func generatedSchema(t *testing.T) *apiextensions.JSONSchemaProps {
	t.Helper()
	path := filepath.Join(testenv.FixtureCRDDir("legacy"), "etcd.aenix.io_etcdclusters.yaml")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run make manifests)", err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(raw, crd); err != nil {
		t.Fatal(err)
	}
	if crd.Spec.Group != legacy.GroupVersion.Group || len(crd.Spec.Versions) != 1 ||
		crd.Spec.Versions[0].Name != legacy.GroupVersion.Version || crd.Spec.Versions[0].Subresources.Status == nil {
		t.Fatalf("unexpected CRD %s: group %s, versions %+v", path, crd.Spec.Group, crd.Spec.Versions)
	}
	internal := &apiextensions.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(crd.Spec.Versions[0].Schema.OpenAPIV3Schema, internal, nil); err != nil {
		t.Fatal(err)
	}
	return internal
}

func toJSONMap(t *testing.T, v any) map[string]any {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestUnstructuredRoundTrip(t *testing.T) {
	c := decodeStrict(t, readManifest(t, "manifest-pod-template.yaml"))
	u, err := legacy.ToUnstructured(c)
	if err != nil {
		t.Fatal(err)
	}
	if u.GetAPIVersion() != "etcd.aenix.io/v1alpha1" || u.GetKind() != "EtcdCluster" {
		t.Fatalf("type %s %s", u.GetAPIVersion(), u.GetKind())
	}
	back, err := legacy.FromUnstructured(u)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(toJSONMap(t, back.Spec), toJSONMap(t, c.Spec)) {
		t.Errorf("spec changed:\n%v\n%v", toJSONMap(t, back.Spec), toJSONMap(t, c.Spec))
	}
	other := &unstructured.Unstructured{}
	other.SetAPIVersion("etcd-operator.cozystack.io/v1alpha2")
	other.SetKind("EtcdCluster")
	if _, err := legacy.FromUnstructured(other); err == nil {
		t.Error("an EtcdCluster of another group was accepted")
	}
}
