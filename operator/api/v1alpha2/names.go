package v1alpha2

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"strings"
)

// The longest names the CRDs admit (their CEL rules on metadata.name say the same, with why;
// TestNameCapsMatchCRDs keeps the two in step). Names derived from them fit their own limits.
const (
	// MaxClusterNameLength: the client Service <cluster>-client is a Service name (63).
	MaxClusterNameLength = 56
	// MaxRestoreNameLength: the safety snapshot <restore>-safety is an EtcdSnapshot name (63).
	MaxRestoreNameLength = 56
	// MaxBackupScheduleNameLength: each run's EtcdSnapshot <schedule>-<minute> (63).
	MaxBackupScheduleNameLength = 54
)

// shortHashLength is how many hex digits of a name's SHA-256 a shortened name ends with.
const shortHashLength = 10

// ShortName is name when it has at most max characters. A longer one is cut and ends with
// "-" and a hash of the whole name: deterministic (every pass derives the same name), and two
// long names sharing their start still differ. Names that fit are never changed, so objects made
// under them keep their names. max must leave room for the hash (at least 12).
func ShortName(name string, max int) string {
	if len(name) <= max {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	prefix := strings.TrimRight(name[:max-shortHashLength-1], "-.")
	return prefix + "-" + hex.EncodeToString(sum[:])[:shortHashLength]
}

// Names of the objects the operator creates for a cluster. They are part of the API: users
// point clients at the Services, mount the Secrets, and other controllers (Kamaji's DataStore,
// the tenant controller) refer to them. The Secret and Certificate names are the public
// operator's, so TLS material carries over on migration.

// HeadlessServiceName is the Service that gives each member Pod its DNS name: <cluster>, or
// the name an adopted cluster's layout keeps.
func HeadlessServiceName(cluster string, l *Layout) string {
	if l != nil && l.HeadlessServiceName != "" {
		return l.HeadlessServiceName
	}
	return cluster
}

// ClientServiceName is the Service applications connect to: <cluster>-client, or the name an
// adopted cluster's layout keeps.
func ClientServiceName(cluster string, l *Layout) string {
	if l != nil && l.ClientServiceName != "" {
		return l.ClientServiceName
	}
	return cluster + "-client"
}

// PDBName is the cluster's PodDisruptionBudget.
func PDBName(cluster string) string { return cluster }

// PVCName is a member's data volume claim.
func PVCName(member string) string { return "data-" + member }

// MemberHost is a member's stable DNS name through the headless Service.
func MemberHost(member, headless, namespace string) string {
	return fmt.Sprintf("%s.%s.%s.svc", member, headless, namespace)
}

// MemberHostOf is MemberHost of a member object, through its cluster's headless Service.
func MemberHostOf(m *EtcdMember) string {
	return MemberHost(m.Name, HeadlessServiceName(m.Spec.ClusterName, m.Spec.Layout), m.Namespace)
}

// MemberFQDN is a member's DNS name with the cluster domain. The kubelet writes this form into
// the Pod's own /etc/hosts, so a starting etcd resolves its own peer URL at once instead of
// waiting out the cluster DNS's negative cache of a name looked up before the Pod existed.
func MemberFQDN(m *EtcdMember, domain string) string {
	return MemberHostOf(m) + "." + domain
}

// RegisteredPeerURL is the member's own entry of spec.initialCluster: the peer URL it is
// registered with in etcd, once it is.
func RegisteredPeerURL(m *EtcdMember) (string, bool) {
	for _, e := range strings.Split(m.Spec.InitialCluster, ",") {
		if name, u, ok := strings.Cut(e, "="); ok && name == m.Name {
			return u, true
		}
	}
	return "", false
}

// Certificates the operator emits for certManager planes, and the Secrets cert-manager fills.
func ServerCertificateName(cluster string) string         { return cluster + "-server" }
func ServerSecretName(cluster string) string              { return cluster + "-server-tls" }
func OperatorClientCertificateName(cluster string) string { return cluster + "-operator-client" }
func OperatorClientSecretName(cluster string) string      { return cluster + "-operator-client-tls" }
func PeerCertificateName(cluster string) string           { return cluster + "-peer" }
func PeerSecretName(cluster string) string                { return cluster + "-peer-tls" }

// The operator's copies of a cluster's TLS material: the key pairs being served and the CAs
// being trusted, which follow their sources (above, or BYO) only as fast as every member can
// follow them. Members mount these; clients outside the cluster should trust the active
// server Secret's ca.crt.
func ActiveServerSecretName(cluster string) string { return cluster + "-active-server-tls" }
func ActiveOperatorClientSecretName(cluster string) string {
	return cluster + "-active-operator-client-tls"
}
func ActivePeerSecretName(cluster string) string { return cluster + "-active-peer-tls" }

// TrustBundleName is the ConfigMap of a trust bundle; revision is a hash of its content.
func TrustBundleName(cluster, revision string) string { return cluster + "-trust-" + revision }

// OperatorAuthSecretName is the owned Secret holding the operator's own etcd credentials.
func OperatorAuthSecretName(cluster string) string { return cluster + OperatorAuthSecretSuffix }

// SnapshotObjectKey is the S3 key an EtcdSnapshot is stored under: <prefix>/<file>, file being
// SnapshotLocation.ArtifactName (a prefix with or without its trailing slash gives the same
// key; no prefix, the bucket's root).
func SnapshotObjectKey(prefix, file string) string {
	return joinPath(prefix, file)
}

// SnapshotFilePath is the path on a PVC an EtcdSnapshot is stored at: <subPath>/<file>.
func SnapshotFilePath(subPath, file string) string {
	return joinPath(subPath, file)
}

// SnapshotAgentPodName is the Pod that takes an EtcdSnapshot; SnapshotCleanupPodName the one
// that deletes its artifact.
func SnapshotAgentPodName(snapshot string) string   { return snapshot + "-snapshot" }
func SnapshotCleanupPodName(snapshot string) string { return snapshot + "-cleanup" }

// RestoreVerifyPodName is the Pod that checks a rollback's source before the cluster is touched.
func RestoreVerifyPodName(restore string) string { return restore + "-verify" }

// QuorumLossRestoreName is the EtcdRestore that recovers a cluster's lost quorum from a
// snapshot, one per etcd cluster ID: <cluster>-quorum-loss-<cluster ID>, shortened when that is
// longer than an EtcdRestore's name may be.
func QuorumLossRestoreName(cluster, clusterID string) string {
	return ShortName(cluster+"-quorum-loss-"+clusterID, MaxRestoreNameLength)
}

// RestoreGenerateName is the generateName of the EtcdRestores `kubectl etcd restore` creates:
// <cluster>-restore-, shortened so the API server's 5 random characters still fit an
// EtcdRestore's name.
func RestoreGenerateName(cluster string) string {
	const random = 5 // what the API server appends to a generateName
	return ShortName(cluster+"-restore", MaxRestoreNameLength-random-1) + "-"
}

// SafetySnapshotName is the EtcdSnapshot an EtcdRestore takes before it rolls its cluster back.
func SafetySnapshotName(restore string) string { return restore + "-safety" }

// ScheduledSnapshotName is the EtcdSnapshot a schedule creates for the run due at unixMinute
// (minutes since the epoch): one name per run, so a run is never taken twice.
func ScheduledSnapshotName(schedule string, unixMinute int64) string {
	return fmt.Sprintf("%s-%d", schedule, unixMinute)
}

// ScheduledDefragName is the EtcdDefrag a defrag schedule creates for the run due at a minute.
func ScheduledDefragName(schedule string, unixMinute int64) string {
	return fmt.Sprintf("%s-%d", schedule, unixMinute)
}

// joinPath puts file under dir, cleaned: a "../" can never climb out of the bucket or claim.
func joinPath(dir, file string) string {
	dir = strings.Trim(path.Clean("/"+dir), "/")
	if dir == "" {
		return file
	}
	return dir + "/" + file
}
