// Package resources builds the Kubernetes objects the operator owns: member Pods and PVCs, the
// cluster's Services and PodDisruptionBudget. Every function is pure: the same input gives the
// same object, so controllers can compare what exists with what should exist.
package resources

import (
	"fmt"
	"maps"
	"net/url"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

// HeadlessServiceName is the Service that gives each member Pod its DNS name.
func HeadlessServiceName(cluster string) string { return cluster }

// ClientServiceName is the Service applications connect to.
func ClientServiceName(cluster string) string { return cluster + "-client" }

// PDBName is the cluster's PodDisruptionBudget.
func PDBName(cluster string) string { return cluster }

// PVCName is a member's data volume claim.
func PVCName(member string) string { return "data-" + member }

// MemberHost is a member's stable DNS name through the headless Service.
func MemberHost(member, cluster, namespace string) string {
	return fmt.Sprintf("%s.%s.%s.svc", member, HeadlessServiceName(cluster), namespace)
}

// MemberFQDN is a member's DNS name with the cluster domain. The kubelet writes this form into
// the Pod's own /etc/hosts, so a starting etcd resolves its own peer URL at once instead of
// waiting out the cluster DNS's negative cache of a name looked up before the Pod existed.
func MemberFQDN(member, cluster, namespace, domain string) string {
	return MemberHost(member, cluster, namespace) + "." + domain
}

// NewPeerURL is the peer URL a member is registered with in etcd (MemberAddAsLearner, or the
// seed's initial cluster); every later use reads it back from spec.initialCluster.
func NewPeerURL(m *v1alpha2.EtcdMember, domain string) string {
	return fmt.Sprintf("%s://%s:%d", peerScheme(m.Spec.TLS), MemberFQDN(m.Name, m.Spec.ClusterName, m.Namespace, domain), v1alpha2.PeerPort)
}

// PeerURL is the URL a member advertises to its peers: the one it was registered with (its
// own entry of spec.initialCluster), so members registered in another form (short names by
// earlier versions, adopted clusters) keep theirs. Before registration it is the short form.
func PeerURL(m *v1alpha2.EtcdMember) string {
	for _, e := range strings.Split(m.Spec.InitialCluster, ",") {
		if name, u, ok := strings.Cut(e, "="); ok && name == m.Name {
			return u
		}
	}
	return fmt.Sprintf("%s://%s:%d", peerScheme(m.Spec.TLS), MemberHost(m.Name, m.Spec.ClusterName, m.Namespace), v1alpha2.PeerPort)
}

// ClientURL is the URL a member advertises to clients: its peer URL's host on the client port.
func ClientURL(m *v1alpha2.EtcdMember) string {
	host := MemberHost(m.Name, m.Spec.ClusterName, m.Namespace)
	if u, err := url.Parse(PeerURL(m)); err == nil && u.Hostname() != "" {
		host = u.Hostname()
	}
	return fmt.Sprintf("%s://%s:%d", clientScheme(m.Spec.TLS), host, v1alpha2.ClientPort)
}

// IsMemberPeerURL reports whether u names the member, in the short or the FQDN form.
func IsMemberPeerURL(m *v1alpha2.EtcdMember, u string) bool {
	parsed, err := url.Parse(u)
	if err != nil {
		return false
	}
	short := MemberHost(m.Name, m.Spec.ClusterName, m.Namespace)
	return parsed.Hostname() == short || strings.HasPrefix(parsed.Hostname(), short+".")
}

func peerScheme(t *v1alpha2.MemberTLS) string {
	if t != nil && (t.PeerSecretRef != nil || t.PeerAutoTLS) {
		return "https"
	}
	return "http"
}

func clientScheme(t *v1alpha2.MemberTLS) string {
	if t != nil && t.ClientServerSecretRef != nil {
		return "https"
	}
	return "http"
}

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

func userLabels(a *v1alpha2.AdditionalMetadata) map[string]string {
	if a == nil {
		return nil
	}
	return a.Labels
}

func userAnnotations(a *v1alpha2.AdditionalMetadata) map[string]string {
	if a == nil {
		return nil
	}
	return a.Annotations
}

// clusterObjectMeta is the metadata of a cluster-owned object.
func clusterObjectMeta(c *v1alpha2.EtcdCluster, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:            name,
		Namespace:       c.Namespace,
		Labels:          MergeMetadata(userLabels(c.Spec.AdditionalMetadata), ClusterLabels(c.Name)),
		Annotations:     MergeMetadata(userAnnotations(c.Spec.AdditionalMetadata), nil),
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(c, v1alpha2.GroupVersion.WithKind("EtcdCluster"))},
	}
}

// memberObjectMeta is the metadata of a member-owned object (Pod, PVC).
func memberObjectMeta(m *v1alpha2.EtcdMember, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:            name,
		Namespace:       m.Namespace,
		Labels:          MergeMetadata(userLabels(m.Spec.AdditionalMetadata), MemberLabels(m.Spec.ClusterName, m.Name, m.Status.IsVoter)),
		Annotations:     MergeMetadata(userAnnotations(m.Spec.AdditionalMetadata), nil),
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(m, v1alpha2.GroupVersion.WithKind("EtcdMember"))},
	}
}

// DesiredReplicas is spec.replicas with its default.
func DesiredReplicas(c *v1alpha2.EtcdCluster) int32 {
	if c.Spec.Replicas == nil {
		return v1alpha2.DefaultReplicas
	}
	return *c.Spec.Replicas
}
