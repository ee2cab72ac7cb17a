package legacy

import (
	"fmt"
	"strconv"
)

// Fixed values of the legacy operator.
const (
	// DefaultImage is the etcd image when podTemplate does not override the etcd container's.
	DefaultImage = "quay.io/coreos/etcd:v3.5.12"
	// EtcdContainerName is the name of the one container the operator generates.
	EtcdContainerName = "etcd"
	// DataVolumeName is the pod volume holding the data dir, whatever the claim template is called.
	DataVolumeName = "data"
	// DefaultClaimTemplateName is the claim template's name unless its metadata names it.
	DefaultClaimTemplateName = "data"
	// DataMountPath is where the data volume is mounted.
	DataMountPath = "/var/run/etcd"
	// DataDirSubPath is the data dir's folder on the volume.
	DataDirSubPath = "default.etcd"
	// DataDir is etcd's --data-dir.
	DataDir = DataMountPath + "/" + DataDirSubPath

	ClientPort  = 2379
	PeerPort    = 2380
	MetricsPort = 2381

	// InitialClusterStateNew and InitialClusterStateExisting are the cluster-state ConfigMap's
	// two values: new until the StatefulSet first became ready, existing from then on.
	InitialClusterStateNew      = "new"
	InitialClusterStateExisting = "existing"
)

// The three labels every legacy object selects on.
const (
	LabelName      = "app.kubernetes.io/name"
	LabelInstance  = "app.kubernetes.io/instance"
	LabelManagedBy = "app.kubernetes.io/managed-by"
)

// Labels are the pod labels the StatefulSet, the Services and the PDB select on. Backup Job
// pods (v0.4.3+) carry them too: select members by owner, not by these labels.
func Labels(c *EtcdCluster) map[string]string {
	return map[string]string{LabelName: "etcd", LabelInstance: c.Name, LabelManagedBy: "etcd-operator"}
}

// StatefulSetName is always the CR's name.
func StatefulSetName(c *EtcdCluster) string { return c.Name }

// HeadlessServiceName is the pods' DNS subdomain, part of every peer and client URL.
func HeadlessServiceName(c *EtcdCluster) string {
	if t := c.Spec.HeadlessServiceTemplate; t != nil && t.Name != "" {
		return t.Name
	}
	return c.Name + "-headless"
}

// ClientServiceName is the ClusterIP Service clients use.
func ClientServiceName(c *EtcdCluster) string {
	if t := c.Spec.ServiceTemplate; t != nil && t.Name != "" {
		return t.Name
	}
	return c.Name
}

// ConfigMapName is the cluster-state ConfigMap the pods read ETCD_INITIAL_CLUSTER* from.
func ConfigMapName(c *EtcdCluster) string { return c.Name + "-cluster-state" }

// PDBName is the PodDisruptionBudget's name (only when templated).
func PDBName(c *EtcdCluster) string { return c.Name }

// PodName is the StatefulSet pod of an ordinal; etcd's member name is the same.
func PodName(c *EtcdCluster, ordinal int) string {
	return StatefulSetName(c) + "-" + strconv.Itoa(ordinal)
}

// ClaimTemplateName is the StatefulSet's volume claim template name. Anything but "data"
// leaves the pods referencing a claim that does not exist (see DataVolumeName), so working
// clusters all use "data".
func ClaimTemplateName(c *EtcdCluster) string {
	if n := c.Spec.Storage.VolumeClaimTemplate.Name; n != "" {
		return n
	}
	return DefaultClaimTemplateName
}

// PVCName is the claim the StatefulSet controller creates for an ordinal: data-<name>-<i>.
func PVCName(c *EtcdCluster, ordinal int) string {
	return ClaimTemplateName(c) + "-" + PodName(c, ordinal)
}

// Token is ETCD_INITIAL_CLUSTER_TOKEN.
func Token(c *EtcdCluster) string { return c.Name + "-" + c.Namespace }

// MemberHost is an ordinal's DNS name, without the cluster domain, as etcd stores it.
func MemberHost(c *EtcdCluster, ordinal int) string {
	return fmt.Sprintf("%s.%s.%s.svc", PodName(c, ordinal), HeadlessServiceName(c), c.Namespace)
}

// PeerURL is an ordinal's peer URL; always https, real certificates or auto-TLS.
func PeerURL(c *EtcdCluster, ordinal int) string {
	return fmt.Sprintf("https://%s:%d", MemberHost(c, ordinal), PeerPort)
}

// ClientURL is an ordinal's advertised client URL.
func ClientURL(c *EtcdCluster, ordinal int) string {
	return fmt.Sprintf("%s%s:%d", clientScheme(c), MemberHost(c, ordinal), ClientPort)
}

// clientScheme is "https://" when a server certificate is configured.
func clientScheme(c *EtcdCluster) string {
	if ServerTLS(c) {
		return "https://"
	}
	return "http://"
}

// Replicas is spec.replicas with the CRD's default of 3.
func Replicas(c *EtcdCluster) int32 {
	if c.Spec.Replicas == nil {
		return 3
	}
	return *c.Spec.Replicas
}

// Image is the etcd container's image: podTemplate's override or DefaultImage.
func Image(c *EtcdCluster) string {
	for _, ct := range c.Spec.PodTemplate.Spec.Containers {
		if ct.Name == EtcdContainerName && ct.Image != "" {
			return ct.Image
		}
	}
	return DefaultImage
}

// tlsSpec is the TLS block, empty without security.
func tlsSpec(c *EtcdCluster) TLSSpec {
	if c.Spec.Security == nil {
		return TLSSpec{}
	}
	return c.Spec.Security.TLS
}

// PeerAutoTLS reports peers running --peer-auto-tls: encrypted, but with no CA and no peer
// authentication.
func PeerAutoTLS(c *EtcdCluster) bool { return tlsSpec(c).PeerSecret == "" }

// ServerTLS reports an https client listener.
func ServerTLS(c *EtcdCluster) bool { return tlsSpec(c).ServerSecret != "" }

// ClientCertAuth reports --client-cert-auth (a clientSecret is configured).
func ClientCertAuth(c *EtcdCluster) bool { return tlsSpec(c).ClientSecret != "" }

// AuthEnabled reports spec.security.enableAuth.
func AuthEnabled(c *EtcdCluster) bool { return c.Spec.Security != nil && c.Spec.Security.EnableAuth }
