package v1alpha2

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EtcdDefragScheduleSpec defragments a cluster on a cron schedule: at each time it creates one
// EtcdDefrag with the rule, and keeps the last few finished runs.
// +kubebuilder:validation:XValidation:rule="size(self.clusterRef.name) > 0",message="spec.clusterRef.name must name the EtcdCluster to defragment"
type EtcdDefragScheduleSpec struct {
	// ClusterRef names the EtcdCluster (same namespace) to defragment.
	ClusterRef corev1.LocalObjectReference `json:"clusterRef"`
	// Schedule is a standard cron expression (minute hour day-of-month month day-of-week, or
	// @hourly, @daily, @every 6h …), e.g. "0 3 * * 0".
	// +kubebuilder:validation:MinLength=1
	Schedule string `json:"schedule"`
	// TimeZone is the IANA time zone the schedule is read in; UTC when empty.
	// +optional
	TimeZone string `json:"timeZone,omitempty"`
	// Suspend stops new runs; a run in flight finishes.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
	// StartingDeadlineSeconds: a run missed while the operator was down is started late only
	// within this many seconds of its time; unset starts the latest missed run however late.
	// +kubebuilder:validation:Minimum=1
	// +optional
	StartingDeadlineSeconds *int64 `json:"startingDeadlineSeconds,omitempty"`
	// Rule of every run (see EtcdDefrag's spec.rule); absent is freeSpaceAbove 200Mi.
	// +optional
	Rule *DefragRule `json:"rule,omitempty"`
	// MemberTimeoutSeconds of every run (default 300).
	// +kubebuilder:validation:Minimum=1
	// +optional
	MemberTimeoutSeconds *int32 `json:"memberTimeoutSeconds,omitempty"`
	// SuccessfulRunsHistoryLimit and FailedRunsHistoryLimit are how many finished EtcdDefrags
	// of this schedule are kept; older ones are deleted.
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=0
	// +optional
	SuccessfulRunsHistoryLimit *int32 `json:"successfulRunsHistoryLimit,omitempty"`
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +optional
	FailedRunsHistoryLimit *int32 `json:"failedRunsHistoryLimit,omitempty"`
}

// EtcdDefragScheduleStatus is the observed state of a defrag schedule.
type EtcdDefragScheduleStatus struct {
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// LastScheduleTime is the latest scheduled time handled: a run started, or skipped.
	// +optional
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`
	// LastSuccessfulTime is when the newest Complete run completed.
	// +optional
	LastSuccessfulTime *metav1.Time `json:"lastSuccessfulTime,omitempty"`
	// NextScheduleTime is when the next run is due (unset while suspended).
	// +optional
	NextScheduleTime *metav1.Time `json:"nextScheduleTime,omitempty"`
	// Active is the run in flight, if any.
	// +optional
	Active string `json:"active,omitempty"`
	// LastRun is the newest EtcdDefrag the schedule created.
	// +optional
	LastRun string `json:"lastRun,omitempty"`
	// MissedRuns counts runs skipped: missed while the operator was down (only the latest is
	// started), or due while the previous run was still in flight.
	// +optional
	MissedRuns int64 `json:"missedRuns,omitempty"`
	// Conditions: Ready says whether the schedule runs (False with InvalidSchedule,
	// ClusterNotFound or Suspended).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// EtcdDefragSchedule creates an EtcdDefrag of a cluster on a schedule. Addition.
//
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63",message="an EtcdDefragSchedule's name is at most 63 characters: it labels the runs it creates"
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterRef.name`
// +kubebuilder:printcolumn:name="Schedule",type=string,JSONPath=`.spec.schedule`
// +kubebuilder:printcolumn:name="Suspend",type=boolean,JSONPath=`.spec.suspend`
// +kubebuilder:printcolumn:name="Last Success",type=date,JSONPath=`.status.lastSuccessfulTime`
// +kubebuilder:printcolumn:name="Next",type=date,JSONPath=`.status.nextScheduleTime`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type EtcdDefragSchedule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   EtcdDefragScheduleSpec   `json:"spec,omitempty"`
	Status EtcdDefragScheduleStatus `json:"status,omitempty"`
}

// EtcdDefragScheduleList is a list of EtcdDefragSchedule.
//
// +kubebuilder:object:root=true
type EtcdDefragScheduleList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EtcdDefragSchedule `json:"items"`
}
