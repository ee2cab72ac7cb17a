package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cozystack/etcd-operator/internal/chartrender"
	"github.com/cozystack/etcd-operator/internal/testenv"
)

// The committed packages render the way Cozystack installs them. (`make verify` checks that they
// are up to date with charts/; internal/dryrun applies the same objects to a real apiserver.)

func renderPackage(t *testing.T, pkg, release, ns string, values map[string]any) ([]chartrender.Manifest, error) {
	t.Helper()
	return renderPackageWithAPIs(t, pkg, release, ns, values, nil)
}

// cozystackAPIs are rule and scrape APIs every Cozystack cluster serves (VictoriaMetrics' operator
// with Prometheus Operator's CRDs, which it converts), beside the ones Helm assumes.
var cozystackAPIs = []string{"monitoring.coreos.com/v1/PrometheusRule", "monitoring.coreos.com/v1/ServiceMonitor",
	"operator.victoriametrics.com/v1beta1/VMRule", "operator.victoriametrics.com/v1beta1/VMServiceScrape"}

// renderPackageWithAPIs renders as on a cluster that serves apis (.Capabilities.APIVersions).
func renderPackageWithAPIs(t *testing.T, pkg, release, ns string, values map[string]any, apis []string) ([]chartrender.Manifest, error) {
	t.Helper()
	return chartrender.RenderManifests(filepath.Join(testenv.RepoRoot(), pkg), values,
		chartrender.Options{ReleaseName: release, Namespace: ns, IncludeCRDs: true, Strict: true, APIVersions: apis})
}

func kinds(ms []chartrender.Manifest) map[string][]*unstructured.Unstructured {
	out := map[string][]*unstructured.Unstructured{}
	for _, m := range ms {
		out[m.Object.GetKind()] = append(out[m.Object.GetKind()], m.Object)
	}
	return out
}

// cozyValues are what Cozystack merges in from the tenant namespace's cozystack-values Secret.
func cozyValues(etcdNamespace string) map[string]any {
	return map[string]any{
		"_namespace": map[string]any{"etcd": etcdNamespace, "host": "tenant-a.example.org"},
		"_cluster":   map[string]any{"root-host": "example.org"},
	}
}

func TestTenantPackageRendersForCozystack(t *testing.T) {
	ms, err := renderPackage(t, tenantPackage, "etcd", "tenant-a", cozyValues("tenant-a"))
	if err != nil {
		t.Fatal(err)
	}
	k := kinds(ms)
	if len(k["EtcdCluster"]) != 1 {
		t.Fatalf("want one EtcdCluster, got kinds %v", keys(k))
	}
	wm := k["WorkloadMonitor"]
	if len(wm) != 1 {
		t.Fatalf("want one WorkloadMonitor, got kinds %v", keys(k))
	}
	if got, _, _ := unstructured.NestedInt64(wm[0].Object, "spec", "minReplicas"); got != 2 {
		t.Errorf("minReplicas of 3 members is %d, want 2 (a majority)", got)
	}
	// The package's own defaults (cozystack-defaults.yaml): the kubernetes app needs a DataStore
	// named after the tenant namespace, and the network policy admits Kamaji by the service label.
	if ds := k["DataStore"]; len(ds) != 1 || ds[0].GetName() != "tenant-a" {
		t.Errorf("want the DataStore tenant-a, got %d DataStores", len(ds))
	}
	if len(k["VerticalPodAutoscaler"]) != 1 {
		t.Errorf("want a VerticalPodAutoscaler, got kinds %v", keys(k))
	}
	if l, _, _ := unstructured.NestedString(k["EtcdCluster"][0].Object, "spec", "additionalMetadata", "labels", "cozystack.io/service"); l != "etcd" {
		t.Errorf("EtcdCluster additionalMetadata label cozystack.io/service=%q, want etcd", l)
	}
}

// The package takes S3 backup credentials only from a Secret of the tenant namespace: the chart's
// inline keys are left out of it (cozystack-defaults.yaml), so its schema refuses them.
func TestTenantPackageBackupCredentialsFromASecret(t *testing.T) {
	backup := func(creds map[string]any) map[string]any {
		v := cozyValues("tenant-a")
		v["backup"] = map[string]any{"enabled": true, "s3": map[string]any{"endpoint": "https://s3.example", "bucket": "b", "credentials": creds}}
		return v
	}
	ms, err := renderPackage(t, tenantPackage, "etcd", "tenant-a", backup(map[string]any{"secretName": "etcd-s3"}))
	if err != nil {
		t.Fatal(err)
	}
	k := kinds(ms)
	if len(k["EtcdBackupSchedule"]) != 1 || len(k["Secret"]) != 0 {
		t.Fatalf("want one EtcdBackupSchedule and no Secret, got kinds %v", keys(k))
	}
	s3 := []string{"spec", "snapshotTemplate", "destination", "s3"}
	if got, _, _ := unstructured.NestedString(k["EtcdBackupSchedule"][0].Object, append(s3, "credentialsSecretRef", "name")...); got != "etcd-s3" {
		t.Errorf("credentialsSecretRef %q, want the tenant's Secret etcd-s3", got)
	}
	if got, _, _ := unstructured.NestedString(k["EtcdBackupSchedule"][0].Object, append(s3, "key")...); got != "tenant-a/etcd" {
		t.Errorf("key prefix %q, want tenant-a/etcd (every tenant's cluster is named etcd)", got)
	}
	// The schema validator names the refused properties in no fixed order: each is looked for alone.
	for name, tc := range map[string]struct {
		creds map[string]any
		want  []string
	}{
		"inline keys": {map[string]any{"accessKeyId": "a", "secretAccessKey": "s"},
			[]string{"/backup/s3/credentials", "additional properties", "'accessKeyId'", "'secretAccessKey'", "not allowed"}},
		"no Secret": {map[string]any{}, []string{"needs backup.s3.credentials.secretName: a Secret in namespace tenant-a"}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := renderPackage(t, tenantPackage, "etcd", "tenant-a", backup(tc.creds))
			for _, want := range tc.want {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("got %v, want an error containing %q", err, want)
				}
			}
		})
	}
}

func TestTenantPackageGuards(t *testing.T) {
	cases := map[string]struct {
		release, ns, owner, want string
	}{
		"release name":        {"etcd2", "tenant-a", "tenant-a", "must be named etcd"},
		"etcd of an ancestor": {"etcd", "tenant-a", "tenant-root", "this tenant's etcd is the one in namespace tenant-root"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := renderPackage(t, tenantPackage, tc.release, tc.ns, cozyValues(tc.owner))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	// Outside Cozystack (no cozystack-values) the package still renders.
	if _, err := renderPackage(t, tenantPackage, "etcd", "tenant-a", nil); err != nil {
		t.Errorf("without Cozystack values: %v", err)
	}
}

func TestSystemPackagesSplitOperatorAndCRDs(t *testing.T) {
	op, err := renderPackage(t, operatorPackage, "etcd-operator", "cozy-etcd-operator",
		map[string]any{"_cluster": map[string]any{"cluster-domain": "cozy.local"}, "_namespace": map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	k := kinds(op)
	if len(k["Deployment"]) != 1 || len(k["CustomResourceDefinition"]) != 0 {
		t.Fatalf("the operator package must hold the Deployment and no CRDs; kinds %v", keys(k))
	}
	d := k["Deployment"][0]
	if r, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas"); r != 2 {
		t.Errorf("the package's defaults did not reach the chart's templates: replicas %d, want 2", r)
	}
	if d.GetName() != "etcd-operator" {
		t.Errorf("Deployment %q, want etcd-operator (the name the subchart gave it)", d.GetName())
	}
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
	if !slices.Contains(args, "--cluster-domain=cozy.local") {
		t.Errorf("manager args %v: want --cluster-domain=cozy.local from _cluster.cluster-domain", args)
	}
	// It replaces Cozystack's operator package, whose Deployment (etcd-operator-controller-manager)
	// runs until the upgrade deletes it: both elect through its Lease, so one leads at a time.
	if !slices.Contains(args, "--leader-election-id=aa20b3a9.etcd-operator.cozystack.io") || !slices.Contains(args, "--leader-elect=true") {
		t.Errorf("manager args %v: want leader election through the replaced operator's Lease aa20b3a9.etcd-operator.cozystack.io", args)
	}
	// Scraped under the name Cozystack's own operator package gives its VMServiceScrape (an upgrade
	// takes it over), keeping the cluster metrics' namespace label for the tenants' alerts.
	if s := k["VMServiceScrape"]; len(s) != 1 || s[0].GetName() != "etcd-operator" {
		t.Errorf("want the VMServiceScrape etcd-operator, got kinds %v", keys(k))
	} else if eps, _, _ := unstructured.NestedSlice(s[0].Object, "spec", "endpoints"); len(eps) != 1 || eps[0].(map[string]any)["honorLabels"] != true {
		t.Errorf("VMServiceScrape endpoints %v: want one with honorLabels", eps)
	}
	crds, err := renderPackage(t, crdsPackage, "etcd-operator-crds", "cozy-etcd-operator", nil)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := filepath.Glob(filepath.Join(testenv.CRDDir(), "*.yaml"))
	if len(crds) != len(want) || len(want) == 0 {
		t.Fatalf("%d CRDs rendered, charts/etcd-operator/crds has %d", len(crds), len(want))
	}
	for _, m := range crds {
		if m.Object.GetKind() != "CustomResourceDefinition" || m.Object.GetAnnotations()["helm.sh/resource-policy"] != "keep" {
			t.Errorf("%s %s: want a CRD kept on uninstall", m.Object.GetKind(), m.Object.GetName())
		}
	}
}

func TestApplicationDefinitionPackageRenders(t *testing.T) {
	ms, err := renderPackage(t, rdPackage, "etcd-rd", "cozy-system", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 1 || ms[0].Object.GetKind() != "ApplicationDefinition" || ms[0].Object.GetName() != "etcd" {
		t.Fatalf("want the ApplicationDefinition etcd, got %d objects", len(ms))
	}
}

func keys(m map[string][]*unstructured.Unstructured) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
