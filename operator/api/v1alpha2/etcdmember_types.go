package v1alpha2

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MemberTLS is the part of a cluster's TLS a member's Pod needs: Secret names and modes.
type MemberTLS struct {
	// +optional
	ClientServerSecretRef *corev1.LocalObjectReference `json:"clientServerSecretRef,omitempty"`
	// +optional
	ClientMTLS bool `json:"clientMTLS,omitempty"`
	// ClientPlaintext keeps a plaintext listener on the client port beside TLS (etcd serves
	// http and https on the same port): the phase of adding client TLS to a running cluster
	// in which the operator and clients still reach members in plaintext. Addition.
	// +optional
	ClientPlaintext bool `json:"clientPlaintext,omitempty"`
	// +optional
	PeerSecretRef *corev1.LocalObjectReference `json:"peerSecretRef,omitempty"`
	// PeerAutoTLS runs peers with etcd's --peer-auto-tls. Together with PeerSecretRef it is the
	// first phase of moving peers from auto-TLS to certificates: the member still verifies no
	// peer, but presents the plane's certificate (installed where auto-TLS keeps its own,
	// <data-dir>/fixtures/peer, by an init container), so members already verifying accept it.
	// +optional
	PeerAutoTLS bool `json:"peerAutoTLS,omitempty"`
	// TrustBundle is the ConfigMap holding the CAs the member trusts on each plane
	// (client-ca.crt, peer-ca.crt). Its name carries a hash of its content, so a changed bundle
	// is a changed Pod and is rolled out like any template change.
	// +optional
	TrustBundle string `json:"trustBundle,omitempty"`
}

// MemberRestore is a resolved restore source: an S3 object or a PVC file, with the checksum it
// must match when one is known.
type MemberRestore struct {
	Source RestoreSource `json:"source"`
	// Checksum is "sha256:<hex>" of the artifact; empty when unknown (then only etcd's own
	// integrity hash at the end of the snapshot is checked). Addition.
	// +optional
	Checksum string `json:"checksum,omitempty"`
	// BumpRevision raises every revision by this much and marks the old ones compacted, so that
	// watchers of a cluster rolled back in place (kube-apiserver) resync instead of missing
	// changes. Addition.
	// +optional
	BumpRevision int64 `json:"bumpRevision,omitempty"`
}

// EtcdMemberSpec is one etcd member. The operator writes it from the cluster's template when it
// creates the member, and keeps it in step with the template afterwards (a changed template is
// rolled out one member at a time).
type EtcdMemberSpec struct {
	// ClusterName is the EtcdCluster this member belongs to.
	// +kubebuilder:validation:MinLength=1
	ClusterName string `json:"clusterName"`

	// +kubebuilder:validation:XValidation:rule="self.matches('^[0-9]+\\\\.[0-9]+\\\\.[0-9]+$')",message="spec.version must be an etcd release in the form MAJOR.MINOR.PATCH, e.g. 3.6.16 (no leading v)"
	Version string `json:"version"`

	Storage StorageSpec `json:"storage"`

	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`
	// +optional
	AdditionalMetadata *AdditionalMetadata `json:"additionalMetadata,omitempty"`
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`
	// +optional
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`
	// +optional
	Options *EtcdOptions `json:"options,omitempty"`
	// +optional
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`

	// Bootstrap is true on the seed, the member that forms the cluster.
	// +optional
	Bootstrap bool `json:"bootstrap,omitempty"`

	// InitialCluster is --initial-cluster. Empty means the member is not yet registered in etcd
	// and no Pod is created.
	InitialCluster string `json:"initialCluster"`

	// ClusterToken is --initial-cluster-token.
	ClusterToken string `json:"clusterToken"`

	// Replicas is always 1: one member is one Pod. The operator never reads it; it is the spec
	// side of the member's /scale subresource, kept as in the public operator's API. A
	// PodDisruptionBudget with maxUnavailable or a percentage over member Pods resolves the
	// expected Pod count through the /scale of each Pod's controller (the EtcdMember), so such
	// budgets written by users keep working. Scale the EtcdCluster instead.
	// +kubebuilder:default=1
	// +kubebuilder:validation:XValidation:rule="self == 1",message="spec.replicas of an EtcdMember is always 1 (one member, one Pod; it exists for the /scale that PodDisruptionBudgets over member Pods resolve): scale the EtcdCluster's spec.replicas instead"
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// Dormant parks the member: its Pod is deleted, its PVC and identity kept.
	// +optional
	Dormant bool `json:"dormant,omitempty"`

	// +optional
	TLS *MemberTLS `json:"tls,omitempty"`

	// Restore seeds the data directory from a snapshot before etcd first starts (the seed of a
	// cluster restored at bootstrap or rolled back in place); the cluster controller resolves
	// it from the cluster's spec or an EtcdRestore.
	// +optional
	Restore *MemberRestore `json:"restore,omitempty"`

	// ForceNewCluster starts the member with --force-new-cluster: it drops every other member
	// from its membership and forms a one-member cluster from its own data. The cluster
	// controller sets it on the survivor of a quorum loss (spec.quorumLoss=RebuildFromSurvivor)
	// and clears it once that cluster has formed. Addition.
	// +optional
	ForceNewCluster bool `json:"forceNewCluster,omitempty"`

	// NodeSelector of the Pod. Addition.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// Tolerations of the Pod. Addition.
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
	// PriorityClassName of the Pod. Addition.
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`
	// ImageRepository of the Pod's etcd image. Addition.
	// +optional
	ImageRepository string `json:"imageRepository,omitempty"`
	// Layout is the cluster's spec.layout: the headless Service of the Pod's subdomain and the
	// data directory inside the volume. Addition.
	// +optional
	Layout *Layout `json:"layout,omitempty"`
}

// EtcdMemberStatus is the observed state of one member.
type EtcdMemberStatus struct {
	// MemberID is etcd's member ID in hex.
	// +optional
	MemberID string `json:"memberID,omitempty"`
	// +optional
	PodName string `json:"podName,omitempty"`
	// PodUID identifies the Pod incarnation; a tmpfs member whose Pod UID changed lost its data.
	// +optional
	PodUID string `json:"podUID,omitempty"`
	// PodNodeBootID is the boot ID of the node the recorded Pod ran on when it was recorded: a
	// tmpfs member whose node booted since (same Pod, new boot ID) lost its data. Addition.
	// +optional
	PodNodeBootID string `json:"podNodeBootID,omitempty"`
	// IsVoter is false while the member is a learner.
	// +optional
	IsVoter bool `json:"isVoter,omitempty"`
	// Replicas is 1 while a Pod exists (the /scale status).
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// +optional
	Selector string `json:"selector,omitempty"`
	// +optional
	PVCName string `json:"pvcName,omitempty"`
	// PVCUID is the UID of the claim the member's data is on. A claim that is gone, being
	// deleted, or replaced by another one means the data is lost for good. Addition.
	// +optional
	PVCUID string `json:"pvcUID,omitempty"`
	// Version is the etcd version the member runs.
	// +optional
	Version string `json:"version,omitempty"`
	// CurrentRevision is the template revision of the running Pod. Addition.
	// +optional
	CurrentRevision string `json:"currentRevision,omitempty"`
	// UpdateRevision is the template revision the member's spec asks for; it differs from
	// CurrentRevision while the Pod waits for its turn in a rolling update. Addition.
	// +optional
	UpdateRevision string `json:"updateRevision,omitempty"`
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// EtcdMember is one member of an EtcdCluster; it owns the member's Pod and PVC.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterName`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.spec.version`
// +kubebuilder:printcolumn:name="Running",type=string,JSONPath=`.status.version`
// +kubebuilder:printcolumn:name="Voter",type=boolean,JSONPath=`.status.isVoter`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type EtcdMember struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   EtcdMemberSpec   `json:"spec,omitempty"`
	Status EtcdMemberStatus `json:"status,omitempty"`
}

// EtcdMemberList is a list of EtcdMember.
//
// +kubebuilder:object:root=true
type EtcdMemberList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EtcdMember `json:"items"`
}
