package legacy

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The field names, types and JSON tags below follow the legacy CRD (etcdclusters.etcd.aenix.io)
// field by field, including value-typed members that the legacy Go types have, so that a legacy
// object converts without loss and the CRD generated from here accepts the same manifests.

// EtcdCluster is a legacy cluster: one StatefulSet of etcd members.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
type EtcdCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   EtcdClusterSpec   `json:"spec,omitempty"`
	Status EtcdClusterStatus `json:"status,omitempty"`
}

// EtcdClusterList is a list of legacy clusters.
// +kubebuilder:object:root=true
type EtcdClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EtcdCluster `json:"items"`
}

// EtcdClusterSpec is the legacy cluster's desired state.
type EtcdClusterSpec struct {
	// Replicas is the StatefulSet's replica count and the size of the initial cluster.
	// +optional
	// +kubebuilder:default:=3
	// +kubebuilder:validation:Minimum:=0
	Replicas *int32 `json:"replicas,omitempty"`
	// Options become etcd flags --key=value (a bare --key when the value is empty).
	// +optional
	Options map[string]string `json:"options,omitempty"`
	// PodTemplate is merged over the generated pod template.
	// +optional
	PodTemplate PodTemplate `json:"podTemplate,omitempty"`
	// ServiceTemplate renames and is merged onto the client Service.
	// +optional
	ServiceTemplate *EmbeddedService `json:"serviceTemplate,omitempty"`
	// HeadlessServiceTemplate renames and labels the headless Service.
	// +optional
	HeadlessServiceTemplate *EmbeddedMetadataResource `json:"headlessServiceTemplate,omitempty"`
	// PodDisruptionBudgetTemplate makes the operator create a PDB; nil means none.
	// +optional
	PodDisruptionBudgetTemplate *EmbeddedPodDisruptionBudget `json:"podDisruptionBudgetTemplate,omitempty"`
	// Storage is an emptyDir or a claim template; the legacy webhook defaults the latter.
	Storage StorageSpec `json:"storage"`
	// Security names bring-your-own TLS Secrets and turns etcd auth on.
	// +optional
	Security *SecuritySpec `json:"security,omitempty"`
	// Bootstrap restores a new cluster from a snapshot (v0.4.3 and later only).
	// +optional
	Bootstrap *BootstrapSpec `json:"bootstrap,omitempty"`
}

// EmbeddedObjectMetadata is the part of ObjectMeta that templates carry.
type EmbeddedObjectMetadata struct {
	// +optional
	Name string `json:"name,omitempty"`
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// PodTemplate overrides the generated pod template.
type PodTemplate struct {
	// +optional
	EmbeddedObjectMetadata `json:"metadata,omitempty"`
	// Spec is strategically merged over the generated pod spec. Like the legacy CRD, the
	// schema keeps it open (the legacy CRD strips PodSpec's schema to stay small).
	// +optional
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	Spec corev1.PodSpec `json:"spec,omitempty"`
}

// EmbeddedService overrides the client Service.
type EmbeddedService struct {
	// +optional
	EmbeddedObjectMetadata `json:"metadata,omitempty"`
	// +optional
	Spec corev1.ServiceSpec `json:"spec,omitempty"`
}

// EmbeddedMetadataResource overrides only an object's metadata.
type EmbeddedMetadataResource struct {
	// +optional
	EmbeddedObjectMetadata `json:"metadata,omitempty"`
}

// EmbeddedPodDisruptionBudget asks for a PDB. Its metadata is accepted but ignored.
type EmbeddedPodDisruptionBudget struct {
	// +optional
	EmbeddedObjectMetadata `json:"metadata,omitempty"`
	// +optional
	Spec PodDisruptionBudgetSpec `json:"spec"`
}

// PodDisruptionBudgetSpec holds at most one of the two budgets; with neither the operator sets
// minAvailable to a quorum.
type PodDisruptionBudgetSpec struct {
	// +optional
	MinAvailable *intstr.IntOrString `json:"minAvailable,omitempty"`
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
}

// StorageSpec is the members' data volume: emptyDir when set, else the claim template.
type StorageSpec struct {
	// +optional
	EmptyDir *corev1.EmptyDirVolumeSource `json:"emptyDir,omitempty"`
	// +optional
	VolumeClaimTemplate EmbeddedPersistentVolumeClaim `json:"volumeClaimTemplate,omitempty"`
}

// EmbeddedPersistentVolumeClaim is the StatefulSet's single volume claim template.
type EmbeddedPersistentVolumeClaim struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	EmbeddedObjectMetadata `json:"metadata,omitempty"`
	// +optional
	Spec corev1.PersistentVolumeClaimSpec `json:"spec,omitempty"`
	// +optional
	Status corev1.PersistentVolumeClaimStatus `json:"status,omitempty"`
}

// SecuritySpec is TLS by Secret name plus the auth switch.
type SecuritySpec struct {
	// +optional
	TLS TLSSpec `json:"tls,omitempty"`
	// EnableAuth has the operator create a password-less root user and enable auth.
	EnableAuth bool `json:"enableAuth,omitempty"`
}

// TLSSpec names the six bring-your-own Secrets.
type TLSSpec struct {
	// +optional
	PeerTrustedCASecret string `json:"peerTrustedCASecret,omitempty"`
	// +optional
	PeerSecret string `json:"peerSecret,omitempty"`
	// +optional
	ServerTrustedCASecret string `json:"serverTrustedCASecret,omitempty"`
	// +optional
	ServerSecret string `json:"serverSecret,omitempty"`
	// +optional
	ClientTrustedCASecret string `json:"clientTrustedCASecret,omitempty"`
	// +optional
	ClientSecret string `json:"clientSecret,omitempty"`
}

// BootstrapSpec initialises a new cluster from a data source (v0.4.3+); consumed at creation.
type BootstrapSpec struct {
	// +optional
	Restore *RestoreSpec `json:"restore,omitempty"`
}

// RestoreSpec restores every member from one snapshot.
type RestoreSpec struct {
	Source BackupDestination `json:"source"`
}

// BackupDestination is exactly one of S3 and PVC.
type BackupDestination struct {
	// +optional
	S3 *S3BackupDestination `json:"s3,omitempty"`
	// +optional
	PVC *PVCBackupDestination `json:"pvc,omitempty"`
}

// S3BackupDestination is an object in an S3-compatible store.
type S3BackupDestination struct {
	Endpoint string `json:"endpoint"`
	Bucket   string `json:"bucket"`
	Key      string `json:"key"`
	// CredentialsSecretRef names a Secret with AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY.
	CredentialsSecretRef corev1.LocalObjectReference `json:"credentialsSecretRef"`
	// +optional
	Region string `json:"region,omitempty"`
	// +optional
	ForcePathStyle bool `json:"forcePathStyle,omitempty"`
}

// PVCBackupDestination is a file on a claim.
type PVCBackupDestination struct {
	ClaimName string `json:"claimName"`
	// +optional
	SubPath string `json:"subPath,omitempty"`
}

// EtcdClusterStatus holds conditions only: no member list, version or cluster ID.
type EtcdClusterStatus struct {
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Condition types, reasons and messages the legacy operator writes.
const (
	ConditionInitialized = "Initialized"
	ConditionReady       = "Ready"
	ConditionError       = "Error"

	ReasonInitializationStarted  = "InitializationStarted"
	ReasonInitializationComplete = "InitializationComplete"
	ReasonWaitingForFirstQuorum  = "WaitingForFirstQuorum"
	ReasonStatefulSetReady       = "StatefulSetReady"
	ReasonStatefulSetNotReady    = "StatefulSetNotReady"
	ReasonSplitbrain             = "Splitbrain"

	MessageInitializationStarted  = "Cluster initialization started"
	MessageInitializationComplete = "Cluster managed resources created"
	MessageStatefulSetReady       = "Cluster StatefulSet is Ready"
	MessageStatefulSetNotReady    = "Cluster StatefulSet is not Ready"
	MessageWaitingForFirstQuorum  = "Waiting for first quorum to be established"
	MessageSplitbrain             = "Etcd endpoints reporting more than one unique cluster ID"
)

// DefaultStorageSize is the claim size the legacy mutating webhook fills in. Read it only.
var DefaultStorageSize = resource.MustParse("4Gi")

// Default applies the legacy mutating webhook's defaults in place: without an emptyDir, the
// claim template gets access mode ReadWriteOnce and a 4Gi request when they are missing. (The
// replicas default of 3 comes from the CRD schema; Replicas reads it.)
func Default(c *EtcdCluster) {
	if c.Spec.Storage.EmptyDir != nil {
		return
	}
	spec := &c.Spec.Storage.VolumeClaimTemplate.Spec
	if len(spec.AccessModes) == 0 {
		spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	}
	if spec.Resources.Requests.Storage().IsZero() {
		// The webhook replaces the whole request list, not only the storage entry.
		spec.Resources.Requests = corev1.ResourceList{corev1.ResourceStorage: DefaultStorageSize.DeepCopy()}
	}
}
