package resources

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

// backupLabels are the labels of the snapshots and restores the operator creates itself: the
// cluster they are of, the operator as their manager, and what made them (key=value).
func backupLabels(cluster, key, value string) map[string]string {
	return map[string]string{v1alpha2.LabelCluster: cluster, v1alpha2.LabelAppManagedBy: v1alpha2.ManagedBy, key: value}
}

// ScheduledSnapshot is the EtcdSnapshot of a schedule's run due at due. It has no owner: it
// lives until retention deletes it, whatever happens to the schedule.
func ScheduledSnapshot(bs *v1alpha2.EtcdBackupSchedule, due time.Time) *v1alpha2.EtcdSnapshot {
	policy := bs.Spec.SnapshotTemplate.DeletionPolicy
	if policy == "" {
		policy = v1alpha2.SnapshotDelete
	}
	return &v1alpha2.EtcdSnapshot{
		ObjectMeta: metav1.ObjectMeta{
			Name: v1alpha2.ScheduledSnapshotName(bs.Name, due.Unix()/60), Namespace: bs.Namespace,
			Labels: backupLabels(bs.Spec.ClusterRef.Name, v1alpha2.LabelBackupSchedule, bs.Name),
		},
		Spec: v1alpha2.EtcdSnapshotSpec{ClusterRef: bs.Spec.ClusterRef, Destination: bs.Spec.SnapshotTemplate.Destination, DeletionPolicy: policy},
	}
}

// SafetySnapshot is the snapshot a rollback takes before it stops anything, to dest. It has no
// owner and retains its artifact: deleting the EtcdRestore keeps the way back.
func SafetySnapshot(er *v1alpha2.EtcdRestore, dest v1alpha2.SnapshotLocation) *v1alpha2.EtcdSnapshot {
	return &v1alpha2.EtcdSnapshot{
		ObjectMeta: metav1.ObjectMeta{Name: v1alpha2.SafetySnapshotName(er.Name), Namespace: er.Namespace,
			Labels: backupLabels(er.Spec.ClusterRef.Name, v1alpha2.LabelRestore, er.Name)},
		Spec: v1alpha2.EtcdSnapshotSpec{ClusterRef: er.Spec.ClusterRef, Destination: dest, DeletionPolicy: v1alpha2.SnapshotRetain},
	}
}

// QuorumLossRestore is the EtcdRestore that recovers a cluster whose quorum is lost for good
// from its newest Complete snapshot. One per incarnation of the etcd cluster (its ID is in the
// name): a second loss, later, is recovered again. The cluster owns it.
func QuorumLossRestore(c *v1alpha2.EtcdCluster, clusterID, snapshot string) *v1alpha2.EtcdRestore {
	return &v1alpha2.EtcdRestore{
		ObjectMeta: metav1.ObjectMeta{
			Name: v1alpha2.QuorumLossRestoreName(c.Name, clusterID), Namespace: c.Namespace,
			Annotations:     map[string]string{v1alpha2.AnnotationQuorumLoss: "true"},
			Labels:          backupLabels(c.Name, v1alpha2.LabelCluster, c.Name),
			OwnerReferences: []metav1.OwnerReference{ClusterOwnerRef(c)},
		},
		Spec: v1alpha2.EtcdRestoreSpec{ClusterRef: corev1.LocalObjectReference{Name: c.Name},
			Source: v1alpha2.RestoreSource{SnapshotRef: &corev1.LocalObjectReference{Name: snapshot}}},
	}
}
