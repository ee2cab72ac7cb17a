package resources

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

// PVC builds a member's data claim; nil for a tmpfs member.
func PVC(m *v1alpha2.EtcdMember) *corev1.PersistentVolumeClaim {
	if m.Spec.Storage.Medium == v1alpha2.StorageMediumMemory {
		return nil
	}
	size := m.Spec.Storage.Size
	if size.IsZero() {
		size = resource.MustParse(v1alpha2.DefaultStorageSize)
	}
	meta := memberObjectMeta(m, v1alpha2.PVCName(m.Name))
	delete(meta.Labels, v1alpha2.LabelRole) // the role changes; the claim's labels need not follow
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: meta,
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: m.Spec.Storage.StorageClassName,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
		},
	}
}
