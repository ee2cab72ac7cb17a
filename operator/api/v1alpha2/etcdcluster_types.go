package v1alpha2

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EtcdClusterSpec is the desired state of an etcd cluster.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.replicas) && self.replicas == 0 && has(self.storage) && has(self.storage.medium) && self.storage.medium == 'Memory')",message="spec.replicas=0 with spec.storage.medium=Memory is unsupported: pausing a memory-backed cluster wedges on resume. Delete and recreate the cluster instead."
// +kubebuilder:validation:XValidation:rule="!(has(self.storage) && has(self.storage.medium) && self.storage.medium == 'Memory') || quantity(string(self.storage.size)).isGreaterThan(quantity('0'))",message="spec.storage.size must be > 0 when spec.storage.medium=Memory (the tmpfs sizeLimit cannot be zero)."
// +kubebuilder:validation:XValidation:rule="!(has(oldSelf.tls) && has(oldSelf.tls.client)) || (has(self.tls) && has(self.tls.client) && self.tls.client == oldSelf.tls.client)",message="spec.tls.client can be added to a running cluster (its members are restarted one at a time into TLS) but not removed or changed; delete and recreate to remove or change it. spec.tls.certificateTemplate may be changed"
// +kubebuilder:validation:XValidation:rule="(has(self.tls) && has(self.tls.peer)) == (has(oldSelf.tls) && has(oldSelf.tls.peer)) && (!has(self.tls) || !has(self.tls.peer) || self.tls.peer == oldSelf.tls.peer || (has(oldSelf.tls.peer.autoTLS) && oldSelf.tls.peer.autoTLS && !(has(self.tls.peer.autoTLS) && self.tls.peer.autoTLS)))",message="spec.tls.peer cannot be added, removed or changed on an existing cluster, except from autoTLS to certificates (secretRef or certManager), which the operator rolls out without cutting any member off; enabling peer TLS on a plaintext cluster is not supported: delete and recreate. spec.tls.certificateTemplate may be changed"
// +kubebuilder:validation:XValidation:rule="has(self.storage.storageClassName) == has(oldSelf.storage.storageClassName)",message="spec.storage.storageClassName cannot be added to or removed from an existing cluster; delete and recreate"
// +kubebuilder:validation:XValidation:rule="!has(self.storage.storageClassName) || !has(oldSelf.storage.storageClassName) || self.storage.storageClassName == oldSelf.storage.storageClassName",message="spec.storage.storageClassName is immutable post-create (a PVC's storageClassName itself is immutable); delete and recreate the cluster to change the StorageClass"
// +kubebuilder:validation:XValidation:rule="!(has(oldSelf.auth) && has(oldSelf.auth.enabled) && oldSelf.auth.enabled) || (has(self.auth) && has(self.auth.enabled) && self.auth.enabled)",message="spec.auth.enabled cannot be turned off once on: etcd keeps auth enabled in its data; delete and recreate the cluster to run without auth"
// +kubebuilder:validation:XValidation:rule="!(has(self.auth) && has(self.auth.enabled) && self.auth.enabled) || (has(self.tls) && has(self.tls.client))",message="spec.auth.enabled requires spec.tls.client (auth credentials must not cross a plaintext connection)"
// +kubebuilder:validation:XValidation:rule="!(has(self.auth) && has(self.auth.enabled) && self.auth.enabled) || has(self.auth.rootCredentialsSecretRef) || (has(self.auth.passwordlessRoot) && self.auth.passwordlessRoot)",message="spec.auth.enabled requires spec.auth.rootCredentialsSecretRef (root's password) or spec.auth.passwordlessRoot (root reached only by a client certificate whose CN is root)"
// +kubebuilder:validation:XValidation:rule="!(has(oldSelf.auth) && has(oldSelf.auth.enabled) && oldSelf.auth.enabled) || ((has(self.auth) && has(self.auth.passwordlessRoot) && self.auth.passwordlessRoot) == (has(oldSelf.auth.passwordlessRoot) && oldSelf.auth.passwordlessRoot))",message="spec.auth.passwordlessRoot cannot be changed once auth is enabled: etcd keeps a root user's no-password option for as long as auth is on"
// +kubebuilder:validation:XValidation:rule="has(self.bootstrap) == has(oldSelf.bootstrap)",message="spec.bootstrap cannot be added to or removed from an existing cluster; it is consulted only at first bootstrap"
// +kubebuilder:validation:XValidation:rule="!has(self.bootstrap) || !has(oldSelf.bootstrap) || self.bootstrap == oldSelf.bootstrap",message="spec.bootstrap is immutable post-create; it is consulted only at first bootstrap"
// +kubebuilder:validation:XValidation:rule="!(has(self.bootstrap) && has(self.bootstrap.restore)) || !(has(self.storage) && has(self.storage.medium) && self.storage.medium == 'Memory')",message="spec.bootstrap.restore is unsupported with spec.storage.medium=Memory: a tmpfs seed would re-restore the snapshot on every restart. Use persistent storage to restore."
// +kubebuilder:validation:XValidation:rule="has(self.layout) == has(oldSelf.layout) && (!has(self.layout) || self.layout == oldSelf.layout)",message="spec.layout cannot be added, removed or changed: member Pods, peer URLs and clients are tied to the names it gives (etcd-migrate sets it when it adopts a cluster)"
type EtcdClusterSpec struct {
	// Replicas is the number of etcd members. 0 pauses the cluster: the last member's Pod is
	// deleted and its PVC and identity kept. An even number is accepted but tolerates no more
	// failures than the odd number below it.
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=0
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// Version of etcd, e.g. 3.6.16. The image tag is v<version>.
	// Changes follow etcd's upgrade and downgrade paths: any patch, one minor up, or one minor
	// down from 3.6 or later, which the operator performs with etcd's downgrade procedure
	// (validate and enable, wait for every member's storage, restart members one at a time).
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^[0-9]+\\\\.[0-9]+\\\\.[0-9]+$')",message="spec.version must be an etcd release in the form MAJOR.MINOR.PATCH, e.g. 3.6.16 (no leading v)"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[0-9]+\\\\.[0-9]+\\\\.[0-9]+$') || !oldSelf.matches('^[0-9]+\\\\.[0-9]+\\\\.[0-9]+$') || (int(self.split('.')[0]) == int(oldSelf.split('.')[0]) && (int(self.split('.')[1]) - int(oldSelf.split('.')[1]) in [0, 1] || (int(oldSelf.split('.')[1]) - int(self.split('.')[1]) == 1 && int(oldSelf.split('.')[1]) >= 6)))",message="spec.version may change by any patch, one minor up, or one minor down from 3.6 or later (etcd's downgrade procedure), one minor at a time; skipping a minor, a major change and a downgrade below 3.5 are refused"
	Version string `json:"version"`

	// Storage of each member's data directory.
	// +kubebuilder:default={size: "1Gi", medium: ""}
	// +optional
	Storage StorageSpec `json:"storage,omitempty"`

	// ProgressDeadlineSeconds bounds how long one change may take before it is reported failed.
	// +kubebuilder:default=600
	// +kubebuilder:validation:Minimum=1
	// +optional
	ProgressDeadlineSeconds *int32 `json:"progressDeadlineSeconds,omitempty"`

	// TLS of the client and peer planes; absent means plaintext.
	// +optional
	TLS *TLSSpec `json:"tls,omitempty"`

	// Auth turns on etcd's root user.
	// +optional
	Auth *AuthSpec `json:"auth,omitempty"`

	// Bootstrap is how a new cluster starts: empty, or restored from a snapshot.
	// +optional
	Bootstrap *BootstrapSpec `json:"bootstrap,omitempty"`

	// Resources of the etcd container; requests default to 100m CPU and 128Mi memory.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// AdditionalMetadata is merged onto the objects the operator creates.
	// +optional
	AdditionalMetadata *AdditionalMetadata `json:"additionalMetadata,omitempty"`

	// Affinity of member Pods. When unset the operator applies a soft pod anti-affinity on
	// kubernetes.io/hostname so members spread over nodes when they can.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`

	// TopologySpreadConstraints of member Pods.
	// +optional
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`

	// Options are typed etcd flags.
	// +optional
	Options *EtcdOptions `json:"options,omitempty"`

	// ImagePullSecrets of member Pods.
	// +optional
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`

	// NodeSelector of member Pods. Addition.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// Tolerations of member Pods. Addition.
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// PriorityClassName of member Pods. Addition.
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="spec.priorityClassName must be a DNS subdomain name"
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`

	// ImageRepository overrides the operator-wide etcd image repository for this cluster, e.g.
	// for an air-gapped mirror. The tag is always v<version>. Addition.
	// +kubebuilder:validation:XValidation:rule="!self.contains('@') && !self.matches(':[^/]*$')",message="spec.imageRepository must be a repository without a tag or digest; the tag is always v<spec.version>"
	// +optional
	ImageRepository string `json:"imageRepository,omitempty"`

	// PodDisruptionBudget controls the budget the operator keeps over the voting members.
	// Addition.
	// +optional
	PodDisruptionBudget *PodDisruptionBudgetSpec `json:"podDisruptionBudget,omitempty"`

	// QuorumLoss is what the operator does once a majority of the voters has lost its data for
	// good (their PVCs deleted or replaced, tmpfs Pods gone; never for a member that may come
	// back, such as one on a NotReady node). Wait (the default) reports QuorumLost and changes
	// nothing. RebuildFromSurvivor forces a one-member cluster from the surviving member with
	// the most data (writes it never received are lost) and adds the others back as new
	// members (a Memory survivor's etcd is restarted in its Pod, keeping its memory volume).
	// RestoreLatestSnapshot rolls the cluster back in place to its newest Complete
	// EtcdSnapshot taken of its current etcd cluster (every write after it is lost). Addition.
	// +kubebuilder:default=Wait
	// +optional
	QuorumLoss QuorumLossPolicy `json:"quorumLoss,omitempty"`

	// Layout keeps the names and paths that the running Pods of a cluster adopted from the legacy
	// etcd.aenix.io operator are tied to. etcd-migrate sets it; it cannot be changed. Addition.
	// +optional
	Layout *Layout `json:"layout,omitempty"`
}

// Layout names what a cluster adopted from another operator already uses: a Pod's DNS
// subdomain is immutable, peer URLs are stored in etcd, clients and certificates name the
// Services, and the data sits where it was written. Members added later use it too.
// +kubebuilder:validation:XValidation:rule="has(self.headlessServiceName) == has(self.clientServiceName) && (!has(self.headlessServiceName) || self.headlessServiceName != self.clientServiceName)",message="spec.layout.headlessServiceName and spec.layout.clientServiceName are set together and must differ"
type Layout struct {
	// HeadlessServiceName is the Service that gives member Pods their DNS names (the Pods'
	// subdomain, the host of every peer URL); default <cluster>.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	// +optional
	HeadlessServiceName string `json:"headlessServiceName,omitempty"`
	// ClientServiceName is the Service applications connect to; default <cluster>-client.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	// +optional
	ClientServiceName string `json:"clientServiceName,omitempty"`
	// DataDirSubPath is etcd's data directory inside each member's volume (the legacy operator's
	// default.etcd); default the volume's root.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z0-9._-]+$') && self != '.' && self != '..'",message="spec.layout.dataDirSubPath must be one relative path segment (letters, digits, '.', '_', '-'), not '.' or '..'"
	// +optional
	DataDirSubPath string `json:"dataDirSubPath,omitempty"`
}

// QuorumLossPolicy says how a cluster that lost a majority of its voters' data recovers.
// +kubebuilder:validation:Enum=Wait;RebuildFromSurvivor;RestoreLatestSnapshot
type QuorumLossPolicy string

const (
	QuorumLossWait                  QuorumLossPolicy = "Wait"
	QuorumLossRebuildFromSurvivor   QuorumLossPolicy = "RebuildFromSurvivor"
	QuorumLossRestoreLatestSnapshot QuorumLossPolicy = "RestoreLatestSnapshot"
)

// PodDisruptionBudgetSpec switches the operator's PodDisruptionBudget.
type PodDisruptionBudgetSpec struct {
	// Enabled false makes the operator delete the budget it made and keep none, for users who
	// render their own: exactly one budget should select the member Pods.
	// +kubebuilder:default=true
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
}

// TLSSpec configures TLS per plane; the planes are independent.
type TLSSpec struct {
	// +optional
	Client *ClientTLS `json:"client,omitempty"`
	// +optional
	Peer *PeerTLS `json:"peer,omitempty"`
	// CertificateTemplate tunes every Certificate the operator emits (not BYO Secrets). It may
	// be changed at any time: the Certificates are updated and cert-manager re-issues them, and
	// etcd picks the new leaves up without a restart.
	// +optional
	CertificateTemplate *CertificateTemplate `json:"certificateTemplate,omitempty"`
}

// ClientTLS is the client plane (port 2379): a BYO Secret or cert-manager. An operator-client
// source turns on mTLS.
// +kubebuilder:validation:XValidation:rule="has(self.serverSecretRef) != has(self.certManager)",message="exactly one of spec.tls.client.serverSecretRef or spec.tls.client.certManager must be set"
// +kubebuilder:validation:XValidation:rule="!has(self.certManager) || !has(self.operatorClientSecretRef)",message="spec.tls.client.operatorClientSecretRef cannot be combined with certManager; use certManager.operatorClientIssuerRef"
type ClientTLS struct {
	// ServerSecretRef is a kubernetes.io/tls Secret with tls.crt, tls.key and ca.crt.
	// +optional
	ServerSecretRef *corev1.LocalObjectReference `json:"serverSecretRef,omitempty"`
	// OperatorClientSecretRef is the client certificate the operator dials with.
	// +optional
	OperatorClientSecretRef *corev1.LocalObjectReference `json:"operatorClientSecretRef,omitempty"`
	// +optional
	CertManager *ClientCertManager `json:"certManager,omitempty"`
}

// ClientCertManager has the operator emit cert-manager Certificates for the client plane.
type ClientCertManager struct {
	ServerIssuerRef IssuerReference `json:"serverIssuerRef"`
	// +optional
	OperatorClientIssuerRef *IssuerReference `json:"operatorClientIssuerRef,omitempty"`
}

// PeerTLS is the peer plane (port 2380): mutual TLS with certificates, or etcd's auto-TLS.
// +kubebuilder:validation:XValidation:rule="[has(self.secretRef), has(self.certManager), has(self.autoTLS) && self.autoTLS].filter(x, x).size() == 1",message="exactly one of spec.tls.peer.secretRef, spec.tls.peer.certManager or spec.tls.peer.autoTLS must be set"
type PeerTLS struct {
	// +optional
	SecretRef *corev1.LocalObjectReference `json:"secretRef,omitempty"`
	// +optional
	CertManager *PeerCertManager `json:"certManager,omitempty"`
	// AutoTLS runs peers with etcd's --peer-auto-tls: traffic is encrypted with certificates
	// each member makes for itself, and no side is verified. It is the legacy etcd.aenix.io
	// operator's default, kept for the clusters etcd-migrate adopts; give new clusters
	// certificates. Addition.
	// +optional
	AutoTLS bool `json:"autoTLS,omitempty"`
}

// PeerCertManager has the operator emit a cert-manager Certificate for the peer plane.
type PeerCertManager struct {
	IssuerRef IssuerReference `json:"issuerRef"`
}

// AuthSpec configures etcd authentication.
// +kubebuilder:validation:XValidation:rule="!(has(self.rootCredentialsSecretRef) && has(self.passwordlessRoot) && self.passwordlessRoot)",message="spec.auth.rootCredentialsSecretRef and spec.auth.passwordlessRoot are mutually exclusive: a passwordless root has no password to apply"
type AuthSpec struct {
	// Enabled turns etcd authentication on once the cluster has formed; it may be set on a
	// running cluster but not turned off again.
	// +optional
	Enabled bool `json:"enabled,omitempty"`
	// RootCredentialsSecretRef is a basic-auth Secret whose password key is root's password.
	// A changed password is applied to etcd (rotation). The operator labels the Secret with
	// the cluster so that it watches it.
	// +optional
	RootCredentialsSecretRef *corev1.LocalObjectReference `json:"rootCredentialsSecretRef,omitempty"`
	// PasswordlessRoot creates root without a password (etcd's NoPassword option): root is
	// reached only with a client certificate whose CN is root, as the legacy etcd.aenix.io
	// operator and kamaji-etcd run it (etcd-migrate sets it for the clusters it adopts). The
	// operator still logs in as its own user. Cannot be changed once auth is on. Addition.
	// +optional
	PasswordlessRoot bool `json:"passwordlessRoot,omitempty"`
}

// BootstrapSpec is consulted once, before the cluster first forms.
type BootstrapSpec struct {
	// Restore seeds the new cluster from a snapshot instead of an empty data directory.
	// +optional
	Restore *RestoreSpec `json:"restore,omitempty"`
}

// MaxStatusMembers bounds status.members (its schema's maxItems).
const MaxStatusMembers = 64

// ClusterMemberStatus is one member as etcd and the operator see it. Addition.
type ClusterMemberStatus struct {
	// Name of the EtcdMember.
	Name string `json:"name"`
	// ID is etcd's member ID in hex.
	// +optional
	ID string `json:"id,omitempty"`
	// Role is Leader, Follower or Learner.
	// +optional
	Role string `json:"role,omitempty"`
	// Version is the etcd version the member runs.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Version string `json:"version,omitempty"`
	// Ready mirrors the member's Ready condition.
	// +optional
	Ready bool `json:"ready,omitempty"`
}

// MinorRecord is when every member started running one etcd minor.
type MinorRecord struct {
	// Version is the minor, e.g. 3.6.
	Version string `json:"version"`
	// RaftIndex is etcd's raft index when every member was first seen running it.
	RaftIndex int64 `json:"raftIndex,omitempty"`
	// Upgraded: the cluster ran an older minor before, so the members' WAL may hold entries that
	// minor wrote until each has taken a snapshot since RaftIndex (etcd 3.7 cannot replay what
	// 3.5 wrote).
	// +optional
	Upgraded bool `json:"upgraded,omitempty"`
}

// EtcdClusterStatus is the observed state of an etcd cluster.
type EtcdClusterStatus struct {
	// ObservedGeneration is the generation this status describes. Addition.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// ReadyMembers counts members whose Ready condition is True (the /scale status).
	// +optional
	ReadyMembers int32 `json:"readyMembers,omitempty"`
	// Selector of member Pods, for /scale.
	// +optional
	Selector string `json:"selector,omitempty"`
	// BrokenMembers counts members the operator is replacing.
	// +optional
	BrokenMembers int32 `json:"brokenMembers,omitempty"`
	// ClusterID is etcd's cluster ID in hex, latched once the cluster has formed.
	// +optional
	ClusterID string `json:"clusterID,omitempty"`
	// ClusterToken is --initial-cluster-token, unique per incarnation of the cluster.
	// +optional
	ClusterToken string `json:"clusterToken,omitempty"`
	// ClientTLSServing is latched once every member serves TLS on the client port: from then
	// on the operator dials with TLS and members drop the plaintext listener they kept while
	// spec.tls.client was being added to a running cluster. Addition.
	// +optional
	ClientTLSServing bool `json:"clientTLSServing,omitempty"`
	// PeerAutoTLS is latched while some member may run etcd's --peer-auto-tls (verifying no
	// peer). When spec.tls.peer moves from autoTLS to certificates, members are first restarted
	// to present the certificates through auto-TLS; once all of them do, this is cleared and
	// members are restarted once more to verify their peers. Addition.
	// +optional
	PeerAutoTLS bool `json:"peerAutoTLS,omitempty"`
	// Minor records since when every member runs the current etcd minor; a minor upgrade after
	// an upgrade waits for every member to snapshot on it (see MinorRecord). Addition.
	// +optional
	Minor *MinorRecord `json:"minor,omitempty"`
	// AuthEnabled is latched once etcd auth has been enabled; from then on the operator logs
	// in as its own etcd user (Secret <cluster>-operator-auth).
	// +optional
	AuthEnabled bool `json:"authEnabled,omitempty"`
	// ProgressDeadline is when the change in flight is reported failed.
	// +optional
	ProgressDeadline *metav1.Time `json:"progressDeadline,omitempty"`
	// Members as etcd reports them. Addition. At most 64 (bounds the cost of spec.version's CEL rule).
	// +kubebuilder:validation:MaxItems=64
	// +listType=map
	// +listMapKey=name
	// +optional
	Members []ClusterMemberStatus `json:"members,omitempty"`
	// LeaderID is the hex ID of the current leader. Addition.
	// +optional
	LeaderID string `json:"leaderID,omitempty"`
	// Rollout is the progress of a rolling update; absent when every member runs the current
	// template. Addition.
	// +optional
	Rollout *RolloutStatus `json:"rollout,omitempty"`
	// Conditions: Available, Progressing, Degraded.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// RolloutStatus is how far a rolling update has come.
type RolloutStatus struct {
	// UpdatedMembers run the current template.
	UpdatedMembers int32 `json:"updatedMembers"`
	// Members is the number of running members.
	Members int32 `json:"members"`
	// Restarting is the member being restarted now, if any.
	// +optional
	Restarting string `json:"restarting,omitempty"`
}

// EtcdCluster is an etcd cluster managed by the operator.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.readyMembers,selectorpath=.status.selector
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 56",message="an EtcdCluster's name is at most 56 characters: its client Service is named <cluster>-client, and a Service's name is at most 63"
// +kubebuilder:validation:XValidation:rule="!self.metadata.name.contains('.')",message="an EtcdCluster's name cannot contain '.': it names its Services and its members' hostnames, which are DNS labels"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.status) || !has(oldSelf.status.members) || self.spec.version == oldSelf.spec.version || !self.spec.version.matches('^[0-9]+\\\\.[0-9]+\\\\.[0-9]+$') || oldSelf.status.members.all(m, !has(m.version) || !m.version.matches('^[0-9]+\\\\.[0-9]+\\\\.[0-9]+$') || (int(self.spec.version.split('.')[0]) == int(m.version.split('.')[0]) && (int(self.spec.version.split('.')[1]) - int(m.version.split('.')[1]) in [0, 1] || (int(m.version.split('.')[1]) - int(self.spec.version.split('.')[1]) == 1 && int(m.version.split('.')[1]) >= 6))))",message="spec.version must be reachable in one step from the version every member runs (status.members[].version): the same minor, one minor up, or one minor down from 3.6 or later; let a running upgrade or downgrade finish before the next"
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.spec.version`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyMembers`
// +kubebuilder:printcolumn:name="Available",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type EtcdCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   EtcdClusterSpec   `json:"spec,omitempty"`
	Status EtcdClusterStatus `json:"status,omitempty"`
}

// EtcdClusterList is a list of EtcdCluster.
//
// +kubebuilder:object:root=true
type EtcdClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EtcdCluster `json:"items"`
}
