package main

import (
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Cozystack hands every app the platform's spread policy as _cluster.scheduling.
// globalAppTopologySpreadConstraints (a YAML document, as the platform's scheduling ConfigMap holds
// it). The members get it, each constraint selecting this cluster's member Pods, and keep the
// package's spread over nodes where the policy names another topology key.
func TestTenantPackageSpreadsMembersByThePlatformPolicy(t *testing.T) {
	members := map[string]any{"app.kubernetes.io/name": "etcd", "etcd-operator.cozystack.io/cluster": "etcd"}
	hostname := map[string]any{"maxSkew": int64(1), "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway",
		"labelSelector": map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/instance": "etcd"}}}
	zone := map[string]any{"maxSkew": int64(2), "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
		"labelSelector": map[string]any{"matchLabels": members}}
	cases := map[string]struct {
		policy any // nil: no scheduling key at all
		want   []any
		err    string
	}{
		"unset":        {want: []any{hostname}},
		"empty string": {policy: "", want: []any{hostname}},
		"zone policy beside the hostname spread": {
			policy: "topologySpreadConstraints:\n- maxSkew: 2\n  topologyKey: topology.kubernetes.io/zone\n  whenUnsatisfiable: DoNotSchedule\n",
			want:   []any{zone, hostname}},
		"the policy's hostname constraint replaces the package's": {
			policy: "topologySpreadConstraints:\n- maxSkew: 1\n  topologyKey: kubernetes.io/hostname\n  whenUnsatisfiable: DoNotSchedule\n",
			want: []any{map[string]any{"maxSkew": int64(1), "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule",
				"labelSelector": map[string]any{"matchLabels": members}}}},
		"a labelSelector of the policy's own is kept": {
			policy: "topologySpreadConstraints:\n- maxSkew: 2\n  topologyKey: topology.kubernetes.io/zone\n  whenUnsatisfiable: DoNotSchedule\n  labelSelector: {matchLabels: {tier: db}}\n",
			want: []any{map[string]any{"maxSkew": int64(2), "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
				"labelSelector": map[string]any{"matchLabels": map[string]any{"tier": "db"}}}, hostname}},
		"not a document with the list": {policy: "- maxSkew: 1\n", err: "must be a YAML document with a topologySpreadConstraints list"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			v := existingAppValues()
			if tc.policy != nil {
				v["_cluster"].(map[string]any)["scheduling"] = map[string]any{"globalAppTopologySpreadConstraints": tc.policy}
			}
			ms, err := renderPackage(t, tenantPackage, "etcd", "tenant-a", v)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %v, want an error containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, _, _ := unstructured.NestedSlice(kinds(ms)["EtcdCluster"][0].Object, "spec", "topologySpreadConstraints")
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("topologySpreadConstraints\n got %v\nwant %v", got, tc.want)
			}
		})
	}
}
