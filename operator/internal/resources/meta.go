package resources

import (
	"maps"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

// ClusterLabels are on every object of a cluster; the cluster label is its selector.
func ClusterLabels(cluster string) map[string]string {
	return map[string]string{
		v1alpha2.LabelAppName:      v1alpha2.AppName,
		v1alpha2.LabelAppInstance:  cluster,
		v1alpha2.LabelAppManagedBy: v1alpha2.ManagedBy,
		v1alpha2.LabelCluster:      cluster,
	}
}

// ClusterSelector selects a cluster's member Pods (and only them: app name plus cluster).
func ClusterSelector(cluster string) map[string]string {
	return map[string]string{v1alpha2.LabelAppName: v1alpha2.AppName, v1alpha2.LabelCluster: cluster}
}

// SelectorString is status.selector of an EtcdCluster, for /scale.
func SelectorString(cluster string) string {
	return metav1.FormatLabelSelector(&metav1.LabelSelector{MatchLabels: ClusterSelector(cluster)})
}

// MemberLabels are a member's labels; voters also carry role=voter, which the PDB selects.
func MemberLabels(cluster, member string, voter bool) map[string]string {
	l := ClusterLabels(cluster)
	l[v1alpha2.LabelAppComponent] = member
	if voter {
		l[v1alpha2.LabelRole] = v1alpha2.RoleVoter
	}
	return l
}

// MemberSelectorString is status.selector of an EtcdMember.
func MemberSelectorString(cluster, member string) string {
	return metav1.FormatLabelSelector(&metav1.LabelSelector{MatchLabels: map[string]string{
		v1alpha2.LabelCluster: cluster, v1alpha2.LabelAppComponent: member,
	}})
}

// MergeMetadata returns user metadata without reserved keys, overlaid by the operator's own.
func MergeMetadata(user, owned map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range user {
		if !strings.HasPrefix(k, v1alpha2.LabelPrefix) {
			out[k] = v
		}
	}
	maps.Copy(out, owned)
	if len(out) == 0 {
		return nil
	}
	return out
}

// UserLabels are spec.additionalMetadata's labels (nil without any).
func UserLabels(a *v1alpha2.AdditionalMetadata) map[string]string {
	if a == nil {
		return nil
	}
	return a.Labels
}

// UserAnnotations are spec.additionalMetadata's annotations (nil without any).
func UserAnnotations(a *v1alpha2.AdditionalMetadata) map[string]string {
	if a == nil {
		return nil
	}
	return a.Annotations
}

// ClusterOwnerRef makes the cluster the controller of an object, so it goes with the cluster.
func ClusterOwnerRef(c *v1alpha2.EtcdCluster) metav1.OwnerReference {
	return *metav1.NewControllerRef(c, v1alpha2.GroupVersion.WithKind("EtcdCluster"))
}

// MemberOwnerRef makes a member the controller of an object (its Pod, its PVC).
func MemberOwnerRef(m *v1alpha2.EtcdMember) metav1.OwnerReference {
	return *metav1.NewControllerRef(m, v1alpha2.GroupVersion.WithKind("EtcdMember"))
}

// ClusterObjectMeta is the metadata of every object a cluster owns: the user's additional
// metadata under the cluster's labels (which carry the cluster label the operator's caches
// select on), the component when there is one, and the cluster as controller.
func ClusterObjectMeta(c *v1alpha2.EtcdCluster, name, component string) metav1.ObjectMeta {
	owned := ClusterLabels(c.Name)
	if component != "" {
		owned[v1alpha2.LabelAppComponent] = component
	}
	meta := metav1.ObjectMeta{Name: name, Namespace: c.Namespace, Labels: maps.Clone(owned),
		OwnerReferences: []metav1.OwnerReference{ClusterOwnerRef(c)}}
	SyncUserMetadata(&meta, c.Spec.AdditionalMetadata, owned)
	return meta
}

// memberObjectMeta is the metadata of a member-owned object (Pod, PVC).
func memberObjectMeta(m *v1alpha2.EtcdMember, name string) metav1.ObjectMeta {
	owned := MemberLabels(m.Spec.ClusterName, m.Name, m.Status.IsVoter)
	meta := metav1.ObjectMeta{Name: name, Namespace: m.Namespace, Labels: maps.Clone(owned),
		OwnerReferences: []metav1.OwnerReference{MemberOwnerRef(m)}}
	SyncUserMetadata(&meta, m.Spec.AdditionalMetadata, owned)
	return meta
}

// DesiredReplicas is spec.replicas with its default.
func DesiredReplicas(c *v1alpha2.EtcdCluster) int32 {
	if c.Spec.Replicas == nil {
		return v1alpha2.DefaultReplicas
	}
	return *c.Spec.Replicas
}
