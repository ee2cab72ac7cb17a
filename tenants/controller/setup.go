package controller

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	kamaji "github.com/cozystack/etcd-operator/tenants/api/kamaji/v1alpha1"
	"github.com/cozystack/etcd-operator/tenants/specs"
)

// Files are where the manager reads the cluster-wide templates from (either may be empty).
type Files struct {
	// Template holds the EtcdCluster spec (YAML) every tenant etcd starts from.
	Template string
	// Backup holds the EtcdBackupSchedule spec (YAML, without clusterRef) every tenant etcd is
	// backed up by; empty or absent: no backups unless a TCP's annotation asks for them.
	Backup string
}

// Setup registers the tenant controller with mgr (whose scheme has kamaji's types, the
// operator's and cert-manager's). It refuses, saying why, a template that is not an
// EtcdCluster spec, a backup template that is not an EtcdBackupSchedule spec, or a bad policy.
// While Kamaji's or cert-manager's CRDs are not served it waits for them (logging which), so
// installing the operator before them is no outage.
func Setup(mgr ctrl.Manager, files Files, o Options) error {
	for _, f := range []struct {
		name string
		into *[]byte
	}{{files.Template, &o.Template}, {files.Backup, &o.Backup}} {
		if f.name == "" {
			continue
		}
		b, err := os.ReadFile(f.name)
		if err != nil {
			return fmt.Errorf("tenant template: %w", err)
		}
		*f.into = b
	}
	if _, err := specs.Spec(o.Template, ""); err != nil {
		return fmt.Errorf("tenant etcd template %s: %w", files.Template, err)
	}
	if _, err := specs.BackupSpec(o.Backup, ""); err != nil {
		return fmt.Errorf("tenant backup template %s: %w", files.Backup, err)
	}
	switch o.DeletionPolicy {
	case "", v1alpha2.TenantDeletionDelete, v1alpha2.TenantDeletionRetain:
	default:
		return fmt.Errorf("tenant deletion policy %q: want %s or %s", o.DeletionPolicy, v1alpha2.TenantDeletionDelete, v1alpha2.TenantDeletionRetain)
	}
	r := &Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("tenant-controller"), Options: o}
	if missing := missingCRDs(mgr); missing != "" {
		// The operator keeps managing every etcd meanwhile: the controller starts once they are served.
		log := mgr.GetLogger().WithName("tenant-controller")
		log.Info("waiting for CRDs before starting the tenant controller", "missing", missing)
		return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
			return wait.PollUntilContextCancel(ctx, crdPoll, false, func(context.Context) (bool, error) {
				if missing := missingCRDs(mgr); missing != "" {
					return false, nil
				}
				log.Info("CRDs served; starting the tenant controller")
				return true, r.SetupWithManager(mgr)
			})
		}))
	}
	return r.SetupWithManager(mgr)
}

// crdPoll is how often a manager started before Kamaji or cert-manager looks for their CRDs.
const crdPoll = 10 * time.Second

// missingCRDs names the CRDs the controller needs that the API server does not serve ("" if none).
func missingCRDs(mgr ctrl.Manager) string {
	var missing []string
	for _, gvk := range []struct{ group, version, kind, what string }{
		{kamaji.GroupVersion.Group, kamaji.GroupVersion.Version, "TenantControlPlane", "Kamaji"},
		{kamaji.GroupVersion.Group, kamaji.GroupVersion.Version, "DataStore", "Kamaji"},
		{"cert-manager.io", "v1", "Issuer", "cert-manager"},
		{"cert-manager.io", "v1", "Certificate", "cert-manager"},
	} {
		if _, err := mgr.GetRESTMapper().RESTMapping(schema.GroupKind{Group: gvk.group, Kind: gvk.kind}, gvk.version); err != nil {
			missing = append(missing, gvk.what+"'s "+gvk.kind)
		}
	}
	return strings.Join(missing, ", ")
}
