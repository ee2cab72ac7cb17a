package localcluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

const (
	annStorageProvisioner = "volume.kubernetes.io/storage-provisioner"
	annProvisionedBy      = "pv.kubernetes.io/provisioned-by"
)

// hostPathProvisioner gives each claim of the local StorageClass a hostPath PV backed
// by <statedir>/pv/<pv-name>, deletes the folder on reclaim, and "expands" a volume
// by raising the PV's and claim's capacity (a folder has no size to grow).
type hostPathProvisioner struct {
	client.Client
	dir string
}

// runProvisioner runs the provisioner until ctx ends.
func runProvisioner(ctx context.Context, cfg *rest.Config, dir string) error {
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return err
	}
	p := &hostPathProvisioner{Client: mgr.GetClient(), dir: dir}
	err = ctrl.NewControllerManagedBy(mgr).Named("hostpath-claims").For(&corev1.PersistentVolumeClaim{}).
		Watches(&corev1.PersistentVolume{}, handler.EnqueueRequestsFromMapFunc(claimOfVolume)).
		Complete(reconcile.Func(p.reconcileClaim))
	if err != nil {
		return err
	}
	err = ctrl.NewControllerManagedBy(mgr).Named("hostpath-reclaim").For(&corev1.PersistentVolume{}).
		Complete(reconcile.Func(p.reconcileVolume))
	if err != nil {
		return err
	}
	go func() { _ = mgr.Start(ctx) }()
	return nil
}

func claimOfVolume(_ context.Context, o client.Object) []reconcile.Request {
	pv, ok := o.(*corev1.PersistentVolume)
	if !ok || pv.Spec.ClaimRef == nil {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: pv.Spec.ClaimRef.Namespace, Name: pv.Spec.ClaimRef.Name}}}
}

func (p *hostPathProvisioner) reconcileClaim(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var pvc corev1.PersistentVolumeClaim
	if err := p.Get(ctx, req.NamespacedName, &pvc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if pvc.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	if pvc.Spec.VolumeName == "" {
		if pvc.Annotations[annStorageProvisioner] != Provisioner {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, p.provision(ctx, &pvc)
	}
	return reconcile.Result{}, p.expand(ctx, &pvc)
}

// volumeFor is the PV provisioned for pvc: hostPath, pre-bound to the claim.
func volumeFor(pvc *corev1.PersistentVolumeClaim, sc *storagev1.StorageClass, dir string) *corev1.PersistentVolume {
	name := "pvc-" + string(pvc.UID)
	reclaim := corev1.PersistentVolumeReclaimDelete
	if sc.ReclaimPolicy != nil {
		reclaim = *sc.ReclaimPolicy
	}
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{annProvisionedBy: Provisioner}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: pvc.Spec.Resources.Requests[corev1.ResourceStorage]},
			AccessModes:                   pvc.Spec.AccessModes,
			PersistentVolumeReclaimPolicy: reclaim,
			StorageClassName:              sc.Name,
			VolumeMode:                    pvc.Spec.VolumeMode,
			ClaimRef: &corev1.ObjectReference{APIVersion: "v1", Kind: "PersistentVolumeClaim",
				Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{
				Path: filepath.Join(dir, name), Type: ptrTo(corev1.HostPathDirectoryOrCreate)}},
		},
	}
}

func ptrTo[T any](v T) *T { return &v }

func (p *hostPathProvisioner) provision(ctx context.Context, pvc *corev1.PersistentVolumeClaim) error {
	if pvc.Spec.StorageClassName == nil {
		return nil
	}
	var sc storagev1.StorageClass
	if err := p.Get(ctx, client.ObjectKey{Name: *pvc.Spec.StorageClassName}, &sc); err != nil {
		return err
	}
	if sc.Provisioner != Provisioner {
		return nil
	}
	pv := volumeFor(pvc, &sc, p.dir)
	// World-writable: pods run as arbitrary non-root users (Restricted PSS) on this test-only volume.
	if err := os.MkdirAll(pv.Spec.HostPath.Path, 0o777); err != nil {
		return err
	}
	if err := os.Chmod(pv.Spec.HostPath.Path, 0o777); err != nil {
		return err
	}
	if err := p.Create(ctx, pv); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create PV %s: %w", pv.Name, err)
	}
	return nil
}

// expand raises the PV's capacity and then the claim's status to the requested size.
func (p *hostPathProvisioner) expand(ctx context.Context, pvc *corev1.PersistentVolumeClaim) error {
	want, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	if !ok {
		return nil
	}
	var pv corev1.PersistentVolume
	if err := p.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, &pv); err != nil {
		return client.IgnoreNotFound(err)
	}
	if pv.Annotations[annProvisionedBy] != Provisioner {
		return nil
	}
	if have := pv.Spec.Capacity[corev1.ResourceStorage]; have.Cmp(want) < 0 {
		pv.Spec.Capacity[corev1.ResourceStorage] = want
		if err := p.Update(ctx, &pv); err != nil {
			return err
		}
	}
	if pvc.Status.Phase != corev1.ClaimBound {
		return nil
	}
	if have, ok := pvc.Status.Capacity[corev1.ResourceStorage]; ok && have.Cmp(want) >= 0 {
		return nil
	}
	pvc.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: want}
	pvc.Status.AllocatedResources = corev1.ResourceList{corev1.ResourceStorage: want}
	pvc.Status.Conditions = nil
	pvc.Status.AllocatedResourceStatuses = nil
	return p.Status().Update(ctx, pvc)
}

// reconcileVolume deletes the folder and the PV of a released claim (reclaim policy Delete).
func (p *hostPathProvisioner) reconcileVolume(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var pv corev1.PersistentVolume
	if err := p.Get(ctx, req.NamespacedName, &pv); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if pv.Annotations[annProvisionedBy] != Provisioner || pv.Status.Phase != corev1.VolumeReleased ||
		pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete || pv.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	path := pv.Spec.HostPath.Path
	if filepath.Dir(path) != p.dir { // never remove anything the provisioner did not create
		return reconcile.Result{}, fmt.Errorf("PV %s: path %s outside %s", pv.Name, path, p.dir)
	}
	if err := os.RemoveAll(path); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{}, client.IgnoreNotFound(p.Delete(ctx, &pv))
}
