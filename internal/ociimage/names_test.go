package ociimage

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/cozystack/etcd-operator/internal/chartrender"
	"github.com/cozystack/etcd-operator/internal/testenv"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestNamesAreWhatTheChartRuns: installed with no values, the operator chart runs
// OperatorImage (and hands it to agents), and its member Pods run EtcdImage(version).
func TestNamesAreWhatTheChartRuns(t *testing.T) {
	chart := filepath.Join(testenv.RepoRoot(), "charts", "etcd-operator")
	operator, err := OperatorImage(chart)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := chartrender.Render(chart, nil, "etcd-operator")
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, o := range objs {
		if o.GetKind() != "Deployment" {
			continue
		}
		var d appsv1.Deployment
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &d); err != nil {
			t.Fatal(err)
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			if c.Name != "manager" {
				continue
			}
			found = true
			if c.Image != operator {
				t.Errorf("the chart runs %s, OperatorImage is %s", c.Image, operator)
			}
			if !slices.Contains(c.Args, "--agent-image="+operator) {
				t.Errorf("the chart's agent image is not %s: %q", operator, c.Args)
			}
			i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "ETCD_IMAGE_REPOSITORY" })
			if i < 0 || c.Env[i].Value+":v3.6.16" != EtcdImage("3.6.16") {
				t.Errorf("the chart's etcd repository (ETCD_IMAGE_REPOSITORY) is not EtcdImage's: %v", c.Env)
			}
		}
	}
	if !found {
		t.Fatal("the chart renders no Deployment with a manager container")
	}
}

func TestNames(t *testing.T) {
	for _, v := range []string{"v3.6.16", "3.6.16"} {
		if got := EtcdImage(v); got != "quay.io/coreos/etcd:v3.6.16" {
			t.Errorf("EtcdImage(%s) = %s", v, got)
		}
		if got := EtcdArchive(v); got != "etcd-v3.6.16.tar" {
			t.Errorf("EtcdArchive(%s) = %s", v, got)
		}
	}
	if _, err := OperatorImage(t.TempDir()); err == nil {
		t.Error("OperatorImage of a folder without a chart: no error")
	}
}
