package v1alpha2

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefragRule decides which members a run defragments. Absent, or empty, means
// freeSpaceAbove 200Mi.
// +kubebuilder:validation:XValidation:rule="!(has(self.all) && self.all) || (!has(self.freeSpaceAbove) && !has(self.quotaUsageAbove) && !has(self.minReclaim))",message="rule.all cannot be combined with freeSpaceAbove/quotaUsageAbove/minReclaim"
// +kubebuilder:validation:XValidation:rule="!has(self.freeSpaceAbove) || quantity(string(self.freeSpaceAbove)).isGreaterThan(quantity('0'))",message="freeSpaceAbove must be greater than 0"
// +kubebuilder:validation:XValidation:rule="!has(self.minReclaim) || quantity(string(self.minReclaim)).isGreaterThan(quantity('0'))",message="minReclaim must be greater than 0"
// +kubebuilder:validation:XValidation:rule="!has(self.minReclaim) || has(self.quotaUsageAbove)",message="minReclaim is only meaningful with quotaUsageAbove"
// +kubebuilder:validation:XValidation:rule="!(has(self.minReclaim) && has(self.freeSpaceAbove)) || quantity(string(self.minReclaim)).compareTo(quantity(string(self.freeSpaceAbove))) <= 0",message="minReclaim must not exceed freeSpaceAbove"
type DefragRule struct {
	// All defragments every member, whatever its size. Not with the thresholds below.
	// +optional
	All bool `json:"all,omitempty"`
	// FreeSpaceAbove defragments a member whose reclaimable space (database size minus the
	// size in use) exceeds this. Default 200Mi.
	// +optional
	FreeSpaceAbove *resource.Quantity `json:"freeSpaceAbove,omitempty"`
	// QuotaUsageAbove: a member whose database exceeds this share of the backend quota ("80%")
	// is defragmented when it would reclaim at least minReclaim, even below freeSpaceAbove.
	// +kubebuilder:validation:Pattern=`^([1-9][0-9]?|100)%$`
	// +optional
	QuotaUsageAbove string `json:"quotaUsageAbove,omitempty"`
	// MinReclaim is the least reclaimable space worth a defrag under quota pressure. Default
	// 32Mi; only with quotaUsageAbove, at most freeSpaceAbove.
	// +optional
	MinReclaim *resource.Quantity `json:"minReclaim,omitempty"`
}

// EtcdDefragSpec is a one-shot defragmentation of a cluster's members. It is immutable: it is a
// record of one run; to run again, create another EtcdDefrag.
// +kubebuilder:validation:XValidation:rule="size(self.clusterRef.name) != 0",message="spec.clusterRef.name is required"
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec of an EtcdDefrag is immutable; create a new EtcdDefrag instead"
type EtcdDefragSpec struct {
	// ClusterRef names the EtcdCluster (same namespace) to defragment.
	ClusterRef corev1.LocalObjectReference `json:"clusterRef"`
	// Rule decides which members are defragmented; the others are Skipped with the reason.
	// +optional
	Rule *DefragRule `json:"rule,omitempty"`
	// TTLSecondsAfterFinished deletes this object that long after it is Complete or Failed;
	// absent keeps it.
	// +kubebuilder:validation:Minimum=0
	// +optional
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`
	// MemberTimeoutSeconds bounds one member's defragmentation; a member that takes longer
	// fails the run. Default 300. Addition.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MemberTimeoutSeconds *int32 `json:"memberTimeoutSeconds,omitempty"`
}

// DefragPhase is where a run is; Complete and Failed are final.
// +kubebuilder:validation:Enum=Pending;Running;Complete;Failed
type DefragPhase string

const (
	DefragPending  DefragPhase = "Pending"
	DefragRunning  DefragPhase = "Running"
	DefragComplete DefragPhase = "Complete"
	DefragFailed   DefragPhase = "Failed"
)

// DefragOutcome is what happened to one member.
type DefragOutcome string

const (
	DefragOutcomePending      DefragOutcome = "Pending"
	DefragOutcomeSkipped      DefragOutcome = "Skipped"
	DefragOutcomeDefragmented DefragOutcome = "Defragmented"
	DefragOutcomeFailed       DefragOutcome = "Failed"
)

// DefragMemberStatus is one member's part of a run.
type DefragMemberStatus struct {
	// Name of the EtcdMember.
	Name string `json:"name"`
	// Role when the run planned it: leader, follower or learner.
	// +optional
	Role string `json:"role,omitempty"`
	// +optional
	Outcome DefragOutcome `json:"outcome,omitempty"`
	// Reason qualifies the outcome (BelowThreshold, RPCError, Timeout, …).
	// +optional
	Reason string `json:"reason,omitempty"`
	// DBSizeBefore and DBSizeAfter are the database's size on disk around the defrag.
	// +optional
	DBSizeBefore int64 `json:"dbSizeBefore,omitempty"`
	// +optional
	DBSizeAfter int64 `json:"dbSizeAfter,omitempty"`
	// ReclaimedBytes is DBSizeBefore minus DBSizeAfter.
	// +optional
	ReclaimedBytes int64 `json:"reclaimedBytes,omitempty"`
	// +optional
	FinishedAt *metav1.Time `json:"finishedAt,omitempty"`
}

// EtcdDefragStatus is the observed state of a run.
type EtcdDefragStatus struct {
	// +optional
	Phase DefragPhase `json:"phase,omitempty"`
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// +optional
	CompletedAt *metav1.Time `json:"completedAt,omitempty"`
	// Defragmented counts the members defragmented.
	// +optional
	Defragmented int32 `json:"defragmented,omitempty"`
	// Members in the order the run takes them: followers first, the leader last.
	// +listType=map
	// +listMapKey=name
	// +optional
	Members []DefragMemberStatus `json:"members,omitempty"`
	// Conditions: Ready is True once Complete; its reason says why a run waits or failed.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// EtcdDefrag defragments an EtcdCluster's members once: only while the cluster is healthy, one
// member at a time, followers first, the leader last after leadership moved away; members the
// rule does not select are skipped with the reason. A NOSPACE alarm is disarmed once the space
// is reclaimed.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterRef.name`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Defragmented",type=integer,JSONPath=`.status.defragmented`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type EtcdDefrag struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   EtcdDefragSpec   `json:"spec,omitempty"`
	Status EtcdDefragStatus `json:"status,omitempty"`
}

// EtcdDefragList is a list of EtcdDefrag.
//
// +kubebuilder:object:root=true
type EtcdDefragList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EtcdDefrag `json:"items"`
}
