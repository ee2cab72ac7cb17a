// Package v1alpha2 holds the etcd-operator.cozystack.io/v1alpha2 API: EtcdCluster, which users
// write, and EtcdMember, one per etcd member, which the operator writes; EtcdSnapshot (one
// snapshot), EtcdBackupSchedule (snapshots on a schedule, with retention), EtcdRestore (an
// in-place rollback of a running cluster), EtcdDefrag (one defragmentation run) and
// EtcdDefragSchedule (defragmentation runs on a schedule).
//
// Field names and meanings match the public cozystack/etcd-operator v1alpha2 API so that its
// manifests apply unchanged; fields this project adds are marked "Addition" in their docs.
//
// +kubebuilder:object:generate=true
// +groupName=etcd-operator.cozystack.io
package v1alpha2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of every type in this package.
	GroupVersion = schema.GroupVersion{Group: "etcd-operator.cozystack.io", Version: "v1alpha2"}

	// SchemeBuilder registers the types of this package with a runtime.Scheme. It is
	// apimachinery's, so importing the API pulls in no controller-runtime.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the types of this package to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &EtcdCluster{}, &EtcdClusterList{}, &EtcdMember{}, &EtcdMemberList{},
		&EtcdSnapshot{}, &EtcdSnapshotList{}, &EtcdBackupSchedule{}, &EtcdBackupScheduleList{},
		&EtcdRestore{}, &EtcdRestoreList{}, &EtcdDefrag{}, &EtcdDefragList{},
		&EtcdDefragSchedule{}, &EtcdDefragScheduleList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
