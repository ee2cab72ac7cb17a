package migrate

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func TestCheckControllersStopped(t *testing.T) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	dep := func(c Controller, replicas, running int32) client.Object {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: c.Name},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas)}, Status: appsv1.DeploymentStatus{Replicas: running}}
	}
	lease := func(renewed time.Time) client.Object {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: DefaultNewController.Namespace, Name: LeaseName},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("replica-1"), LeaseDurationSeconds: ptr.To[int32](15),
				RenewTime: &metav1.MicroTime{Time: renewed}}}
	}
	cases := []struct {
		name    string
		objs    []client.Object
		running bool
	}{
		{"neither installed", nil, false},
		{"both scaled to zero", []client.Object{dep(DefaultLegacyController, 0, 0), dep(DefaultNewController, 0, 0)}, false},
		{"legacy running", []client.Object{dep(DefaultLegacyController, 1, 1)}, true},
		{"legacy scaled down, Pod still there", []client.Object{dep(DefaultLegacyController, 0, 1)}, true},
		{"new operator running", []client.Object{dep(DefaultNewController, 2, 2)}, true},
		{"lease held", []client.Object{lease(now.Add(-5 * time.Second))}, true},
		{"lease expired", []client.Object{lease(now.Add(-time.Minute))}, false},
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tc.objs...).Build()
			err := CheckControllersStopped(context.Background(), c, DefaultLegacyController, DefaultNewController, now)
			if (err != nil) != tc.running {
				t.Errorf("err = %v, want running=%v", err, tc.running)
			}
		})
	}
}

func TestParseController(t *testing.T) {
	for s, ok := range map[string]bool{"ns/name": true, "name": false, "/name": false, "ns/": false, "a/b/c": false} {
		if _, err := ParseController(s); (err == nil) != ok {
			t.Errorf("ParseController(%q) = %v", s, err)
		}
	}
}
