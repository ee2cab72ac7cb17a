package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestScope(t *testing.T) {
	const ns, op, etcd = `namespace="__NAMESPACE__"`, `cluster="__CLUSTER__"`, `service="__CLUSTER__-metrics"`
	tests := []struct {
		expr, want string
		skip       bool   // no cluster metric: not a cluster's rule
		err        string // part of the error
	}{
		{expr: `etcd_operator_cluster_leader_present == 0`,
			want: `etcd_operator_cluster_leader_present{` + ns + `,` + op + `} == 0`},
		{expr: `etcd_operator_cluster_members{state="ready"} < on(namespace, cluster) etcd_operator_cluster_members{state="desired"}`,
			want: `etcd_operator_cluster_members{` + ns + `,` + op + `,state="ready"} < on(namespace, cluster) etcd_operator_cluster_members{` + ns + `,` + op + `,state="desired"}`},
		{expr: `time() - etcd_operator_cluster_last_snapshot_timestamp_seconds > 25 * 3600`,
			want: `time() - etcd_operator_cluster_last_snapshot_timestamp_seconds{` + ns + `,` + op + `} > 25 * 3600`},
		{expr: `max by (namespace, service) (increase(etcd_server_leader_changes_seen_total[1h])) > 4`,
			want: `max by (namespace, service) (increase(etcd_server_leader_changes_seen_total{` + ns + `,` + etcd + `}[1h])) > 4`},
		{expr: `histogram_quantile(0.99, sum by (le) (rate(etcd_disk_wal_fsync_duration_seconds_bucket{le!="+Inf"} [5m]))) > 0.5`,
			want: `histogram_quantile(0.99, sum by (le) (rate(etcd_disk_wal_fsync_duration_seconds_bucket{` + ns + `,` + etcd + `,le!="+Inf"}[5m]))) > 0.5`},
		{expr: `sum by (controller) (rate(controller_runtime_reconcile_errors_total{controller=~"etcd.*"}[5m])) > 0`, skip: true},
		{expr: `etcd_server_has_leader == 0 and up == 1`, err: "reads a cluster's metrics and others"},
		{expr: `etcd_server_has_leader{state="x"`, err: "unclosed matchers"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			got, ok, err := scope(tt.expr)
			switch {
			case tt.err != "":
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want one containing %q", err, tt.err)
				}
			case err != nil:
				t.Fatal(err)
			case ok == tt.skip:
				t.Fatalf("ok %v, want %v", ok, !tt.skip)
			case got != tt.want:
				t.Errorf("got\n  %s\nwant\n  %s", got, tt.want)
			}
		})
	}
}

// Every fleet-wide alert that reads a cluster's metrics is in the per-cluster file, and only those.
func TestGenerateKeepsEveryClusterAlert(t *testing.T) {
	fleet, err := os.ReadFile(filepath.Join("..", "..", fleetRules))
	if err != nil {
		t.Fatal(err)
	}
	out, err := generate(fleet)
	if err != nil {
		t.Fatal(err)
	}
	var in, got ruleFile
	if err := yaml.Unmarshal(fleet, &in); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	var want, have []string
	for _, g := range in.Groups {
		for _, r := range g.Rules {
			if strings.Contains(r.Expr, "etcd_") || strings.Contains(r.Expr, "grpc_server_") {
				want = append(want, r.Alert)
			}
		}
	}
	for _, g := range got.Groups {
		for _, r := range g.Rules {
			have = append(have, r.Alert)
			if !strings.Contains(r.Expr, "__CLUSTER__") {
				t.Errorf("%s is not narrowed to the cluster: %s", r.Alert, r.Expr)
			}
		}
	}
	if !slices.Equal(have, want) || len(want) == 0 {
		t.Errorf("per-cluster alerts %v, want %v", have, want)
	}
}
