package v1alpha2

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SnapshotDeletionPolicy says what happens to a snapshot's artifact when its EtcdSnapshot is deleted.
// +kubebuilder:validation:Enum=Retain;Delete
type SnapshotDeletionPolicy string

const (
	// SnapshotRetain keeps the artifact (the default for snapshots taken by hand).
	SnapshotRetain SnapshotDeletionPolicy = "Retain"
	// SnapshotDelete deletes the artifact with the object (scheduled snapshots, by default).
	SnapshotDelete SnapshotDeletionPolicy = "Delete"
)

// EtcdSnapshotSpec is a one-shot snapshot of a cluster to a destination. It is immutable: to
// store elsewhere, create another EtcdSnapshot.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec of an EtcdSnapshot is immutable; create a new EtcdSnapshot instead"
// +kubebuilder:validation:XValidation:rule="size(self.clusterRef.name) > 0",message="spec.clusterRef.name must name the EtcdCluster to snapshot"
type EtcdSnapshotSpec struct {
	// ClusterRef names the EtcdCluster (same namespace) to snapshot.
	ClusterRef corev1.LocalObjectReference `json:"clusterRef"`
	// Destination is where the snapshot is stored: <key>/<name>.db in an S3 bucket, or
	// <subPath>/<name>.db on a PVC (.db.zst, .db.age or .db.zst.age when compressed or
	// encrypted).
	Destination SnapshotLocation `json:"destination"`
	// DeletionPolicy: Retain keeps the artifact when this object is deleted; Delete removes it
	// too. Addition.
	// +kubebuilder:default=Retain
	// +optional
	DeletionPolicy SnapshotDeletionPolicy `json:"deletionPolicy,omitempty"`
}

// SnapshotPhase is where a snapshot is; Complete and Failed are final.
// +kubebuilder:validation:Enum=Pending;Started;Complete;Failed
type SnapshotPhase string

const (
	SnapshotPending  SnapshotPhase = "Pending"
	SnapshotStarted  SnapshotPhase = "Started"
	SnapshotComplete SnapshotPhase = "Complete"
	SnapshotFailed   SnapshotPhase = "Failed"
)

// SnapshotArtifact is the stored snapshot.
type SnapshotArtifact struct {
	// URI is s3://<bucket>/<key> or pvc://<claim>/<path>.
	URI string `json:"uri"`
	// SizeBytes is the size of the stored file.
	// +optional
	SizeBytes int64 `json:"sizeBytes,omitempty"`
	// Checksum is sha256:<hex> of the stored file (compressed and encrypted when it is),
	// verified by reading it back.
	// +optional
	Checksum string `json:"checksum,omitempty"`
	// Compression of the stored file; empty on snapshots taken before it was recorded (None).
	// Addition.
	// +optional
	Compression SnapshotCompression `json:"compression,omitempty"`
	// Encryption of the stored file; unset when it is not encrypted. Addition.
	// +optional
	Encryption *ArtifactEncryption `json:"encryption,omitempty"`
}

// ArtifactEncryption is how a stored file was encrypted.
type ArtifactEncryption struct {
	// SecretName is the Secret whose keys encrypted it; a restore decrypts with its identities.
	SecretName string `json:"secretName"`
	// Recipients are the age public keys it was encrypted to: an identity decrypts it when
	// `age-keygen -y` prints one of them.
	// +optional
	Recipients []string `json:"recipients,omitempty"`
}

// EtcdSnapshotStatus is the observed state of a snapshot.
type EtcdSnapshotStatus struct {
	// +optional
	Phase SnapshotPhase `json:"phase,omitempty"`
	// Artifact is set once the snapshot is Complete.
	// +optional
	Artifact *SnapshotArtifact `json:"artifact,omitempty"`
	// Member is the EtcdMember the snapshot was streamed from. Addition.
	// +optional
	Member string `json:"member,omitempty"`
	// MemberID is that member's etcd ID in hex. Addition.
	// +optional
	MemberID string `json:"memberID,omitempty"`
	// ClusterID is the etcd cluster ID in hex of the snapshot's cluster. Addition.
	// +optional
	ClusterID string `json:"clusterID,omitempty"`
	// Revision: every write up to this etcd revision is in the snapshot (the member's revision
	// when the snapshot began; later writes may be in it too). Addition.
	// +optional
	Revision int64 `json:"revision,omitempty"`
	// EtcdVersion is the version of the member it was taken from. Addition.
	// +optional
	EtcdVersion string `json:"etcdVersion,omitempty"`
	// StartTime and CompletionTime bound the snapshot; Duration is the time between. Additions.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// +optional
	Duration *metav1.Duration `json:"duration,omitempty"`
	// Conditions: Ready is True once Complete; its reason says why not otherwise.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// EtcdSnapshot is a one-shot snapshot of an EtcdCluster, streamed from a healthy member
// (a follower when there is one) to S3 or a PVC and verified before it is Complete.
//
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63",message="an EtcdSnapshot's name is at most 63 characters: it labels the snapshot's agent Pod"
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterRef.name`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Revision",type=integer,JSONPath=`.status.revision`,priority=1
// +kubebuilder:printcolumn:name="Size",type=integer,JSONPath=`.status.artifact.sizeBytes`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type EtcdSnapshot struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   EtcdSnapshotSpec   `json:"spec,omitempty"`
	Status EtcdSnapshotStatus `json:"status,omitempty"`
}

// EtcdSnapshotList is a list of EtcdSnapshot.
//
// +kubebuilder:object:root=true
type EtcdSnapshotList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EtcdSnapshot `json:"items"`
}
