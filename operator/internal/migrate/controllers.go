package migrate

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Controller names an operator's Deployment.
type Controller struct{ Namespace, Name string }

func (c Controller) String() string { return c.Namespace + "/" + c.Name }

// ParseController reads "namespace/name".
func ParseController(s string) (Controller, error) {
	ns, name, ok := strings.Cut(s, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return Controller{}, fmt.Errorf("%q: want namespace/name of a Deployment", s)
	}
	return Controller{Namespace: ns, Name: name}, nil
}

// Default Deployments: the legacy operator's kustomize and chart installs, and this operator's chart.
var (
	DefaultLegacyController = Controller{Namespace: "etcd-operator-system", Name: "etcd-operator-controller-manager"}
	DefaultNewController    = Controller{Namespace: "etcd-operator-system", Name: "etcd-operator"}
)

// CheckControllersStopped refuses while either operator may act: the legacy one would recreate
// what the adoption deletes. A Deployment counts as running while it asks for replicas or still
// has Pods; this operator also while a replica holds its Lease (lease, in newCtl's namespace: the
// manager's --leader-election-id).
func CheckControllersStopped(ctx context.Context, c client.Client, legacyCtl, newCtl Controller, lease string, now time.Time) error {
	for _, d := range []Controller{legacyCtl, newCtl} {
		dep := &appsv1.Deployment{}
		switch err := c.Get(ctx, client.ObjectKey{Namespace: d.Namespace, Name: d.Name}, dep); {
		case apierrors.IsNotFound(err):
		case err != nil:
			return fmt.Errorf("deployment %s: %w", d, err)
		case dep.Spec.Replicas == nil || *dep.Spec.Replicas > 0 || dep.Status.Replicas > 0:
			return fmt.Errorf("deployment %s is running (%d replicas): scale it to 0 and wait for its Pods to go", d, dep.Status.Replicas)
		}
	}
	l := &coordinationv1.Lease{}
	switch err := c.Get(ctx, client.ObjectKey{Namespace: newCtl.Namespace, Name: lease}, l); {
	case apierrors.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("lease %s/%s: %w", newCtl.Namespace, lease, err)
	case leaseHeld(l, now):
		return fmt.Errorf("an etcd-operator replica (%s) holds lease %s/%s: stop it first", *l.Spec.HolderIdentity, newCtl.Namespace, lease)
	}
	return nil
}

func leaseHeld(l *coordinationv1.Lease, now time.Time) bool {
	s := l.Spec
	if s.HolderIdentity == nil || *s.HolderIdentity == "" || s.RenewTime == nil || s.LeaseDurationSeconds == nil {
		return false
	}
	return now.Before(s.RenewTime.Add(time.Duration(*s.LeaseDurationSeconds) * time.Second))
}
