package migrate

import (
	"cmp"
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

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

func TestCheckControllersStopped(t *testing.T) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	dep := func(c Controller, replicas, running int32) client.Object {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: c.Name},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas)}, Status: appsv1.DeploymentStatus{Replicas: running}}
	}
	const cozystackLease = "aa20b3a9.etcd-operator.cozystack.io"
	leaseNamed := func(name string, renewed time.Time) client.Object {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: DefaultNewController.Namespace, Name: name},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("replica-1"), LeaseDurationSeconds: ptr.To[int32](15),
				RenewTime: &metav1.MicroTime{Time: renewed}}}
	}
	lease := func(renewed time.Time) client.Object { return leaseNamed(v1alpha2.DefaultLeaderElectionID, renewed) }
	cases := []struct {
		name    string
		objs    []client.Object
		lease   string // --new-controller-lease; empty: the default
		running bool
	}{
		{"neither installed", nil, "", false},
		{"both scaled to zero", []client.Object{dep(DefaultLegacyController, 0, 0), dep(DefaultNewController, 0, 0)}, "", false},
		{"legacy running", []client.Object{dep(DefaultLegacyController, 1, 1)}, "", true},
		{"legacy scaled down, Pod still there", []client.Object{dep(DefaultLegacyController, 0, 1)}, "", true},
		{"new operator running", []client.Object{dep(DefaultNewController, 2, 2)}, "", true},
		{"lease held", []client.Object{lease(now.Add(-5 * time.Second))}, "", true},
		{"lease expired", []client.Object{lease(now.Add(-time.Minute))}, "", false},
		// The Cozystack package elects through the Lease of the operator it replaced.
		{"the package's lease held", []client.Object{leaseNamed(cozystackLease, now.Add(-5*time.Second))}, cozystackLease, true},
		{"another lease held than the one asked for", []client.Object{leaseNamed(cozystackLease, now.Add(-5*time.Second))}, "", false},
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tc.objs...).Build()
			lease := cmp.Or(tc.lease, v1alpha2.DefaultLeaderElectionID)
			err := CheckControllersStopped(context.Background(), c, DefaultLegacyController, DefaultNewController, lease, now)
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
