package v1alpha2

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ConcurrencyPolicy says what a scheduled run does while the previous snapshot is in flight.
// +kubebuilder:validation:Enum=Forbid;Replace
type ConcurrencyPolicy string

const (
	// ConcurrencyForbid skips the run; the snapshot in flight goes on.
	ConcurrencyForbid ConcurrencyPolicy = "Forbid"
	// ConcurrencyReplace fails the snapshot in flight (reason Superseded) and starts a new one.
	ConcurrencyReplace ConcurrencyPolicy = "Replace"
)

// EtcdBackupScheduleSpec takes snapshots of a cluster on a cron schedule and keeps the last few.
// +kubebuilder:validation:XValidation:rule="size(self.clusterRef.name) > 0",message="spec.clusterRef.name must name the EtcdCluster to back up"
type EtcdBackupScheduleSpec struct {
	// ClusterRef names the EtcdCluster (same namespace) to back up.
	ClusterRef corev1.LocalObjectReference `json:"clusterRef"`
	// Schedule is a standard cron expression (minute hour day-of-month month day-of-week, or
	// @hourly, @daily, @every 30m …), e.g. "*/30 * * * *".
	// +kubebuilder:validation:MinLength=1
	Schedule string `json:"schedule"`
	// TimeZone is the IANA time zone the schedule is read in, e.g. Europe/Berlin; UTC when empty.
	// +optional
	TimeZone string `json:"timeZone,omitempty"`
	// Suspend stops new runs; the snapshot in flight finishes and retention still applies.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
	// ConcurrencyPolicy: Forbid (default) skips a run while the previous snapshot is in flight;
	// Replace fails that snapshot and starts a new one.
	// +kubebuilder:default=Forbid
	// +optional
	ConcurrencyPolicy ConcurrencyPolicy `json:"concurrencyPolicy,omitempty"`
	// StartingDeadlineSeconds: a run missed (the operator was down) is started late only within
	// this many seconds of its time; unset starts the latest missed run however late. Only the
	// latest missed run is ever started, and status counts the others.
	// +kubebuilder:validation:Minimum=1
	// +optional
	StartingDeadlineSeconds *int64 `json:"startingDeadlineSeconds,omitempty"`
	// SnapshotTemplate is what each snapshot is made from.
	SnapshotTemplate SnapshotTemplate `json:"snapshotTemplate"`
	// Retention says which snapshots are kept.
	// +kubebuilder:default={keepLast: 3}
	// +optional
	Retention BackupRetention `json:"retention,omitempty"`
}

// SnapshotTemplate is the part of each scheduled EtcdSnapshot's spec the schedule sets.
type SnapshotTemplate struct {
	// Destination of every snapshot: each is stored as <key>/<snapshot-name>.db in S3 or
	// <subPath>/<snapshot-name>.db on a PVC.
	Destination SnapshotLocation `json:"destination"`
	// DeletionPolicy of each snapshot: Delete (default) removes the artifact when retention (or
	// anyone) deletes the EtcdSnapshot; Retain leaves it in the store.
	// +kubebuilder:default=Delete
	// +optional
	DeletionPolicy SnapshotDeletionPolicy `json:"deletionPolicy,omitempty"`
}

// BackupRetention keeps the newest Complete snapshots by count and, optionally, by age. The newest
// Complete snapshot is never deleted, nor one a restore is reading.
// +kubebuilder:validation:XValidation:rule="!has(self.maxAge) || duration(self.maxAge) > duration('0s')",message="spec.retention.maxAge must be a positive duration, e.g. 168h"
type BackupRetention struct {
	// KeepLast is how many Complete snapshots are kept.
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=1
	// +optional
	KeepLast *int32 `json:"keepLast,omitempty"`
	// MaxAge deletes Complete snapshots older than this (a Go duration, e.g. 168h), keeping the
	// newest one whatever its age.
	// +optional
	MaxAge *metav1.Duration `json:"maxAge,omitempty"`
	// KeepFailed is how many Failed snapshots are kept for inspection.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +optional
	KeepFailed *int32 `json:"keepFailed,omitempty"`
}

// EtcdBackupScheduleStatus is the observed state of a schedule.
type EtcdBackupScheduleStatus struct {
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// LastScheduleTime is the latest scheduled time handled: a run started, or skipped (missed
	// past the deadline, or a snapshot in flight under Forbid).
	// +optional
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`
	// LastSuccessfulTime is when the newest Complete snapshot completed.
	// +optional
	LastSuccessfulTime *metav1.Time `json:"lastSuccessfulTime,omitempty"`
	// NextScheduleTime is when the next run is due (unset while suspended).
	// +optional
	NextScheduleTime *metav1.Time `json:"nextScheduleTime,omitempty"`
	// Active is the snapshot in flight, if any.
	// +optional
	Active string `json:"active,omitempty"`
	// LastSnapshot is the newest snapshot the schedule created.
	// +optional
	LastSnapshot string `json:"lastSnapshot,omitempty"`
	// MissedRuns counts runs skipped because the operator was down past their time (only the
	// latest missed run is started), or because a snapshot was in flight (Forbid).
	// +optional
	MissedRuns int64 `json:"missedRuns,omitempty"`
	// Conditions: Ready says whether the schedule runs (False with InvalidSchedule,
	// ClusterNotFound or Suspended).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// EtcdBackupSchedule takes an EtcdSnapshot of a cluster on a schedule and deletes old ones.
// Addition.
//
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 54",message="an EtcdBackupSchedule's name is at most 54 characters: each run's EtcdSnapshot is named <schedule>-<minute> (63 at most)"
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterRef.name`
// +kubebuilder:printcolumn:name="Schedule",type=string,JSONPath=`.spec.schedule`
// +kubebuilder:printcolumn:name="Suspend",type=boolean,JSONPath=`.spec.suspend`
// +kubebuilder:printcolumn:name="Last Success",type=date,JSONPath=`.status.lastSuccessfulTime`
// +kubebuilder:printcolumn:name="Next",type=date,JSONPath=`.status.nextScheduleTime`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type EtcdBackupSchedule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   EtcdBackupScheduleSpec   `json:"spec,omitempty"`
	Status EtcdBackupScheduleStatus `json:"status,omitempty"`
}

// EtcdBackupScheduleList is a list of EtcdBackupSchedule.
//
// +kubebuilder:object:root=true
type EtcdBackupScheduleList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EtcdBackupSchedule `json:"items"`
}
