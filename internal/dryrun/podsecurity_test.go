package dryrun

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/internal/testenv"
)

// restrictedNamespace enforces the Restricted Pod Security Standard, so the apiserver's
// PodSecurity admission refuses a Pod that breaks it (it only warns for a Deployment).
const restrictedNamespace = "pss-restricted"

// TestOperatorPodIsRestricted creates, with dry-run, a Pod of every operator Deployment template
// the value matrix renders, in a namespace that enforces the Restricted standard: the chart's
// manager Pod must be admitted as it is. A Pod stripped of its security context must be refused
// there first, or the namespace would enforce nothing and the check would prove nothing.
func TestOperatorPodIsRestricted(t *testing.T) {
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: restrictedNamespace, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce":         "restricted",
		"pod-security.kubernetes.io/enforce-version": "latest",
	}}}
	if err := env.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(testenv.RepoRoot(), "charts", "testdata", "etcd-operator", "*.yaml"))
	if len(files) == 0 {
		t.Fatal("no operator chart golden renders")
	}
	for i, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		t.Run(name, func(t *testing.T) {
			pod := deploymentPod(t, f)
			if i == 0 {
				loose := pod.DeepCopy()
				loose.Spec.SecurityContext, loose.Spec.Containers[0].SecurityContext = nil, nil
				if err := dryRunCreate(ctx, loose); err == nil || !strings.Contains(err.Error(), "violates PodSecurity") {
					t.Fatalf("a Pod without a security context was not refused by PodSecurity: %v", err)
				}
			}
			if err := dryRunCreate(ctx, pod); err != nil {
				t.Errorf("the manager Pod is not admitted under the Restricted standard: %v", err)
			}
		})
	}
}

func dryRunCreate(ctx context.Context, pod *corev1.Pod) error {
	return env.Client.Create(ctx, pod, client.DryRunAll)
}

// deploymentPod is a Pod of the one Deployment in a golden render, in restrictedNamespace.
func deploymentPod(t *testing.T, file string) *corev1.Pod {
	t.Helper()
	objs, err := readObjects(file)
	if err != nil {
		t.Fatal(err)
	}
	var deployments []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "Deployment" {
			deployments = append(deployments, o)
		}
	}
	if len(deployments) != 1 {
		t.Fatalf("%d Deployments in %s, want 1", len(deployments), file)
	}
	tmpl, _, err := unstructured.NestedMap(deployments[0].Object, "spec", "template")
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(tmpl, pod); err != nil {
		t.Fatal(err)
	}
	pod.Name, pod.Namespace = deployments[0].GetName(), restrictedNamespace
	return pod
}
