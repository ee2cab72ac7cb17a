package v1alpha2

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EtcdRestoreSpec rolls a running cluster back to a snapshot in place: it keeps its name,
// Services, certificates, Secrets and client endpoints; every member is replaced by one
// restored from the snapshot. It is immutable; a restore runs once.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec of an EtcdRestore is immutable; create a new EtcdRestore instead"
// +kubebuilder:validation:XValidation:rule="size(self.clusterRef.name) > 0",message="spec.clusterRef.name must name the EtcdCluster to roll back"
// +kubebuilder:validation:XValidation:rule="has(self.source.snapshotRef) || has(self.safetySnapshot)",message="spec.safetySnapshot.destination is required unless spec.source.snapshotRef is set (then the safety snapshot goes beside it)"
// +kubebuilder:validation:XValidation:rule="!has(self.source.s3) || (has(self.source.s3.key) && size(self.source.s3.key) > 0)",message="spec.source.s3.key must be the exact (non-empty) object key"
// +kubebuilder:validation:XValidation:rule="!has(self.source.pvc) || (has(self.source.pvc.subPath) && size(self.source.pvc.subPath) > 0)",message="spec.source.pvc.subPath must be the exact (non-empty) snapshot file path"
type EtcdRestoreSpec struct {
	// ClusterRef names the EtcdCluster (same namespace) to roll back.
	ClusterRef corev1.LocalObjectReference `json:"clusterRef"`
	// Source is the snapshot to roll back to.
	Source RestoreSource `json:"source"`
	// SafetySnapshot is where the snapshot taken of the cluster before it is rolled back goes;
	// by default beside the source EtcdSnapshot's artifact.
	// +optional
	SafetySnapshot *SafetySnapshot `json:"safetySnapshot,omitempty"`
}

// SafetySnapshot is the destination of the snapshot a rollback takes first.
type SafetySnapshot struct {
	Destination SnapshotLocation `json:"destination"`
}

// RestorePhase is where a rollback is; Complete and Failed are final.
// +kubebuilder:validation:Enum=Pending;SafetySnapshot;Restoring;Complete;Failed
type RestorePhase string

const (
	RestorePending        RestorePhase = "Pending"
	RestoreSafetySnapshot RestorePhase = "SafetySnapshot"
	RestoreRestoring      RestorePhase = "Restoring"
	RestoreComplete       RestorePhase = "Complete"
	RestoreFailed         RestorePhase = "Failed"
)

// EtcdRestoreStatus is the observed state of a rollback.
type EtcdRestoreStatus struct {
	// +optional
	Phase RestorePhase `json:"phase,omitempty"`
	// SafetySnapshot is the EtcdSnapshot taken before the rollback.
	// +optional
	SafetySnapshot string `json:"safetySnapshot,omitempty"`
	// Revision is the etcd revision the data was rolled back to (before the bump that keeps
	// watchers from missing changes).
	// +optional
	Revision int64 `json:"revision,omitempty"`
	// ClusterID is the etcd cluster ID after the rollback.
	// +optional
	ClusterID string `json:"clusterID,omitempty"`
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// Conditions: Ready is True once Complete.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// EtcdRestore rolls an EtcdCluster back to a snapshot in place, after taking a safety snapshot.
// Addition.
//
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 56",message="an EtcdRestore's name is at most 56 characters: its safety snapshot is named <restore>-safety (63 at most)"
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterRef.name`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Revision",type=integer,JSONPath=`.status.revision`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type EtcdRestore struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   EtcdRestoreSpec   `json:"spec,omitempty"`
	Status EtcdRestoreStatus `json:"status,omitempty"`
}

// EtcdRestoreList is a list of EtcdRestore.
//
// +kubebuilder:object:root=true
type EtcdRestoreList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EtcdRestore `json:"items"`
}
