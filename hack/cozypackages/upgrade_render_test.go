package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// existingAppValues are the values a tenant's HelmRelease carries today, written by Cozystack from
// the app's spec with its schema's defaults (testdata/cozystack-etcd-app.yaml says what they render).
func existingAppValues() map[string]any {
	v := cozyValues("tenant-a")
	v["_cluster"].(map[string]any)["cluster-domain"] = "cozy.local"
	v["version"] = "3.6.11"
	v["size"] = "4Gi"
	v["storageClass"] = ""
	v["replicas"] = 3
	v["resources"] = map[string]any{"cpu": "1000m", "memory": "512Mi"}
	return v
}

// Upgrading a tenant from Cozystack's own etcd app to this package must not touch what runs: the
// same EtcdCluster spec (so no member rolls), the same CAs and issuers (a changed CA Certificate
// would be re-issued), the same Secrets, the legacy Service and the dashboard's Role. Leaf
// certificates may gain names (the cluster domain's), which only re-issues them from the same CA.
func TestTenantPackageRendersAnExistingCozystackAppUnchanged(t *testing.T) {
	ms, err := renderPackageWithAPIs(t, tenantPackage, "etcd", "tenant-a", existingAppValues(), cozystackAPIs)
	if err != nil {
		t.Fatal(err)
	}
	ours := map[string]*unstructured.Unstructured{}
	for _, m := range ms {
		ours[m.Object.GetKind()+"/"+m.Object.GetName()] = m.Object
	}
	for _, want := range readFixture(t, "testdata/cozystack-etcd-app.yaml") {
		key := want.GetKind() + "/" + want.GetName()
		got, ok := ours[key]
		if !ok {
			t.Errorf("%s: not rendered", key)
			continue
		}
		switch {
		case want.GetKind() == "EtcdCluster":
			for _, d := range subsetDiff(want.Object["spec"], got.Object["spec"], "spec") {
				t.Errorf("%s: %s", key, d)
			}
		case want.GetKind() == "Certificate" && !isCA(want):
			checkLeaf(t, key, want, got)
		case want.Object["spec"] != nil:
			if d := subsetDiff(want.Object["spec"], got.Object["spec"], "spec"); len(d) > 0 || !sameKeys(want.Object["spec"], got.Object["spec"]) {
				t.Errorf("%s: spec differs from Cozystack's app (%v):\n got %v\nwant %v", key, d, got.Object["spec"], want.Object["spec"])
			}
		case want.Object["rules"] != nil:
			if !reflect.DeepEqual(normal(want.Object["rules"]), normal(got.Object["rules"])) {
				t.Errorf("%s: rules %v, want %v", key, got.Object["rules"], want.Object["rules"])
			}
		}
	}
}

func isCA(u *unstructured.Unstructured) bool {
	ca, _, _ := unstructured.NestedBool(u.Object, "spec", "isCA")
	return ca
}

// checkLeaf: the same Secret, issuer and key; every name Cozystack's certificate has, and, for
// the server and peer certificates, the cluster domain's names (cozy.local) beside them.
func checkLeaf(t *testing.T, key string, want, got *unstructured.Unstructured) {
	t.Helper()
	for _, f := range [][]string{{"spec", "secretName"}, {"spec", "issuerRef", "name"}, {"spec", "privateKey"}, {"spec", "commonName"}} {
		w, wok, _ := unstructured.NestedFieldNoCopy(want.Object, f...)
		g, _, _ := unstructured.NestedFieldNoCopy(got.Object, f...)
		if wok && !reflect.DeepEqual(normal(w), normal(g)) {
			t.Errorf("%s: %s is %v, want %v", key, strings.Join(f, "."), g, w)
		}
	}
	wantDNS, _, _ := unstructured.NestedStringSlice(want.Object, "spec", "dnsNames")
	gotDNS, _, _ := unstructured.NestedStringSlice(got.Object, "spec", "dnsNames")
	for _, n := range wantDNS {
		if !slices.Contains(gotDNS, n) {
			t.Errorf("%s: dnsNames %v lack %s", key, gotDNS, n)
		}
	}
	if len(wantDNS) > 0 && !slices.Contains(gotDNS, "*.etcd.tenant-a.svc.cozy.local") {
		t.Errorf("%s: dnsNames %v lack the member names in the cluster domain cozy.local (_cluster.cluster-domain)", key, gotDNS)
	}
}

// subsetDiff lists where got differs from want at want's leaves (quantities compared by value).
func subsetDiff(want, got any, path string) []string {
	if wm, ok := want.(map[string]any); ok {
		gm, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s is %v, want an object", path, got)}
		}
		var out []string
		for k, w := range wm {
			out = append(out, subsetDiff(w, gm[k], path+"."+k)...)
		}
		return out
	}
	if ws, ok := want.(string); ok {
		if gs, ok := got.(string); ok && sameQuantity(ws, gs) {
			return nil
		}
	}
	if !reflect.DeepEqual(normal(want), normal(got)) {
		return []string{fmt.Sprintf("%s is %v, want %v", path, got, want)}
	}
	return nil
}

func sameQuantity(a, b string) bool {
	qa, errA := resource.ParseQuantity(a)
	qb, errB := resource.ParseQuantity(b)
	return errA == nil && errB == nil && qa.Cmp(qb) == 0
}

func sameKeys(want, got any) bool {
	wm, _ := want.(map[string]any)
	gm, _ := got.(map[string]any)
	return len(wm) == len(gm)
}

// normal makes YAML- and template-decoded values comparable (numbers as float64).
func normal(v any) any {
	raw, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(raw, &out)
	return out
}

func readFixture(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	var out []*unstructured.Unstructured
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			break
		}
		if obj != nil {
			out = append(out, &unstructured.Unstructured{Object: obj})
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s holds no objects", path)
	}
	return out
}
