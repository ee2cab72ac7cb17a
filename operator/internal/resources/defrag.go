package resources

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

// ScheduledDefrag is the EtcdDefrag of a defrag schedule's run due at due, named after its
// minute so a run is never created twice. The schedule owns it: its history limits delete old
// runs, and deleting the schedule deletes them.
func ScheduledDefrag(ds *v1alpha2.EtcdDefragSchedule, due time.Time) *v1alpha2.EtcdDefrag {
	return &v1alpha2.EtcdDefrag{
		ObjectMeta: metav1.ObjectMeta{
			Name: v1alpha2.ScheduledDefragName(ds.Name, due.Unix()/60), Namespace: ds.Namespace,
			Labels:          backupLabels(ds.Spec.ClusterRef.Name, v1alpha2.LabelDefragSchedule, ds.Name),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ds, v1alpha2.GroupVersion.WithKind("EtcdDefragSchedule"))},
		},
		Spec: v1alpha2.EtcdDefragSpec{ClusterRef: ds.Spec.ClusterRef, Rule: ds.Spec.Rule.DeepCopy(),
			MemberTimeoutSeconds: ds.Spec.MemberTimeoutSeconds},
	}
}
