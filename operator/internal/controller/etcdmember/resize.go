package etcdmember

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

// resizePVC grows the member's claim to spec.storage.size (which only grows: CEL refuses a
// smaller size) when its StorageClass allows expansion; the volume grows online, nothing is
// restarted. st.volume says where it stands.
func (r *Reconciler) resizePVC(ctx context.Context, st *memberState, pvc *corev1.PersistentVolumeClaim) error {
	want := st.member.Spec.Storage.Size
	requested := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	if requested.Cmp(want) >= 0 {
		st.volume = volumeProgress(pvc, want)
		return nil
	}
	if pvc.Status.Phase != corev1.ClaimBound {
		st.volume = metav1.Condition{Status: metav1.ConditionFalse, Reason: v1alpha2.ReasonResizing,
			Message: fmt.Sprintf("PVC %s is %s; it is resized to %s once bound", pvc.Name, pvc.Status.Phase, want.String())}
		return nil
	}
	if why, err := r.expansionRefused(ctx, pvc); err != nil || why != "" {
		if why != "" {
			msg := fmt.Sprintf("PVC %s stays at %s, not %s: %s", pvc.Name, requested.String(), want.String(), why)
			st.volume = metav1.Condition{Status: metav1.ConditionFalse, Reason: v1alpha2.ReasonExpansionNotSupported, Message: msg}
			if prev, _ := r.warned.Swap(string(st.member.UID)+"/volume", msg); prev != msg {
				r.event(st.member, corev1.EventTypeWarning, v1alpha2.ReasonExpansionNotSupported, "ResizePVC", "%s", msg)
			}
		}
		return err
	}
	patch := client.MergeFrom(pvc.DeepCopy())
	pvc.Spec.Resources.Requests[corev1.ResourceStorage] = want
	if err := r.Client.Patch(ctx, pvc, patch); err != nil {
		return err
	}
	r.event(st.member, corev1.EventTypeNormal, v1alpha2.ReasonResizing, "ResizePVC", "resizing PVC %s from %s to %s", pvc.Name, requested.String(), want.String())
	st.volume = volumeProgress(pvc, want)
	return nil
}

// expansionRefused says why the claim's StorageClass cannot grow it ("" when it can).
func (r *Reconciler) expansionRefused(ctx context.Context, pvc *corev1.PersistentVolumeClaim) (string, error) {
	name := ""
	if pvc.Spec.StorageClassName != nil {
		name = *pvc.Spec.StorageClassName
	}
	if name == "" {
		return "the claim has no StorageClass, so nothing can expand it", nil
	}
	sc := &storagev1.StorageClass{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, sc); apierrors.IsNotFound(err) {
		return fmt.Sprintf("its StorageClass %s does not exist", name), nil
	} else if err != nil {
		return "", err
	}
	if sc.AllowVolumeExpansion == nil || !*sc.AllowVolumeExpansion {
		return fmt.Sprintf("StorageClass %s does not allow volume expansion (allowVolumeExpansion)", name), nil
	}
	return "", nil
}

// volumeProgress is the VolumeResized condition of a claim asked for want.
func volumeProgress(pvc *corev1.PersistentVolumeClaim, want resource.Quantity) metav1.Condition {
	have, ok := pvc.Status.Capacity[corev1.ResourceStorage]
	if ok && have.Cmp(want) >= 0 {
		return metav1.Condition{Status: metav1.ConditionTrue, Reason: v1alpha2.ReasonResized,
			Message: fmt.Sprintf("PVC %s has %s", pvc.Name, have.String())}
	}
	msg := fmt.Sprintf("PVC %s is growing from %s to %s", pvc.Name, have.String(), want.String())
	for _, c := range pvc.Status.Conditions {
		if c.Status == corev1.ConditionTrue {
			msg += fmt.Sprintf(" (%s: %s)", c.Type, c.Message)
		}
	}
	return metav1.Condition{Status: metav1.ConditionFalse, Reason: v1alpha2.ReasonResizing, Message: msg}
}
