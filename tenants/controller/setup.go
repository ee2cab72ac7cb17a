package controller

import (
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	kamaji "github.com/cozystack/etcd-operator/tenants/api/kamaji/v1alpha1"
	"github.com/cozystack/etcd-operator/tenants/specs"
)

// Setup registers the tenant controller with mgr (whose scheme has kamaji's types, the
// operator's and cert-manager's). It refuses, saying why, what cannot work: Kamaji's or
// cert-manager's CRDs missing, a template that is not an EtcdCluster spec, a bad policy.
func Setup(mgr ctrl.Manager, templateFile string, o Options) error {
	if templateFile != "" {
		b, err := os.ReadFile(templateFile)
		if err != nil {
			return fmt.Errorf("tenant etcd template: %w", err)
		}
		o.Template = b
	}
	if _, err := specs.Spec(o.Template, ""); err != nil {
		return fmt.Errorf("tenant etcd template %s: %w", templateFile, err)
	}
	switch o.DeletionPolicy {
	case "", v1alpha2.TenantDeletionDelete, v1alpha2.TenantDeletionRetain:
	default:
		return fmt.Errorf("tenant deletion policy %q: want %s or %s", o.DeletionPolicy, v1alpha2.TenantDeletionDelete, v1alpha2.TenantDeletionRetain)
	}
	for _, gvk := range []struct{ group, version, kind, what string }{
		{kamaji.GroupVersion.Group, kamaji.GroupVersion.Version, "TenantControlPlane", "Kamaji"},
		{kamaji.GroupVersion.Group, kamaji.GroupVersion.Version, "DataStore", "Kamaji"},
		{"cert-manager.io", "v1", "Issuer", "cert-manager"},
	} {
		if _, err := mgr.GetRESTMapper().RESTMapping(schemaGK(gvk.group, gvk.kind), gvk.version); err != nil {
			return fmt.Errorf("the tenant controller needs %s's %s CRD, which this cluster does not serve: %w", gvk.what, gvk.kind, err)
		}
	}
	return (&Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("tenant-controller"), Options: o}).SetupWithManager(mgr)
}

func schemaGK(group, kind string) schema.GroupKind { return schema.GroupKind{Group: group, Kind: kind} }
