package v1alpha2

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// StorageMedium selects where a member keeps its data directory.
// +kubebuilder:validation:Enum="";Memory
type StorageMedium string

const (
	// StorageMediumDefault keeps data on a PersistentVolumeClaim.
	StorageMediumDefault StorageMedium = ""
	// StorageMediumMemory keeps data on a tmpfs emptyDir sized by storage.size.
	StorageMediumMemory StorageMedium = "Memory"
)

// StorageSpec describes a member's data volume.
type StorageSpec struct {
	// Size of the PVC, or the sizeLimit of the tmpfs with medium Memory. It only grows; existing
	// PVCs are resized online when their StorageClass allows volume expansion.
	// +kubebuilder:default="1Gi"
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).compareTo(quantity(string(oldSelf))) >= 0",message="spec.storage.size cannot be shrunk"
	// +optional
	Size resource.Quantity `json:"size,omitempty"`

	// Medium is "" (a PersistentVolumeClaim) or Memory (tmpfs). Immutable.
	// +kubebuilder:default=""
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.storage.medium is immutable; delete and recreate the cluster to change the storage backend"
	// +optional
	Medium StorageMedium `json:"medium,omitempty"`

	// StorageClassName of the PVCs: unset uses the namespace default, "" disables dynamic
	// provisioning. Ignored with medium Memory. Immutable.
	// +optional
	StorageClassName *string `json:"storageClassName,omitempty"`
}

// AdditionalMetadata is merged onto every object the operator creates for a cluster. Keys under
// etcd-operator.cozystack.io/ are reserved and dropped.
type AdditionalMetadata struct {
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// EtcdOptions are typed etcd server flags.
type EtcdOptions struct {
	// QuotaBackendBytes is --quota-backend-bytes.
	// +kubebuilder:validation:Minimum=0
	// +optional
	QuotaBackendBytes *int64 `json:"quotaBackendBytes,omitempty"`

	// AutoCompactionMode is --auto-compaction-mode.
	// +kubebuilder:validation:Enum=periodic;revision
	// +optional
	AutoCompactionMode string `json:"autoCompactionMode,omitempty"`

	// AutoCompactionRetention is --auto-compaction-retention: a Go duration or a bare integer.
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$|^[0-9]+$`
	// +optional
	AutoCompactionRetention string `json:"autoCompactionRetention,omitempty"`

	// SnapshotCount is --snapshot-count.
	// +kubebuilder:validation:Minimum=1
	// +optional
	SnapshotCount *int64 `json:"snapshotCount,omitempty"`
}

// IssuerReference names a cert-manager issuer: an Issuer or ClusterIssuer of cert-manager.io, or
// with group set, an external issuer of any kind (e.g. group awspca.cert-manager.io, kind
// AWSPCAClusterIssuer). The kind is checked only for cert-manager.io, whose kinds are known.
// +kubebuilder:validation:XValidation:rule="(has(self.group) && size(self.group) > 0 && self.group != 'cert-manager.io') || !has(self.kind) || self.kind in ['Issuer', 'ClusterIssuer']",message="issuerRef.kind must be Issuer or ClusterIssuer for cert-manager.io issuers; set issuerRef.group to name an external issuer of another kind"
type IssuerReference struct {
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// Kind is Issuer or ClusterIssuer for cert-manager.io; an external issuer's kind otherwise.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[A-Za-z][A-Za-z0-9]*$`
	// +kubebuilder:default=Issuer
	// +optional
	Kind string `json:"kind,omitempty"`
	// Group of the issuer's API; empty means cert-manager.io.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Group string `json:"group,omitempty"`
}

// CertificateTemplate tunes every cert-manager Certificate the operator emits. Unset fields keep
// the defaults: cert-manager's duration (90 days) and renewBefore (a third of the duration), and
// ECDSA P-256 keys.
// +kubebuilder:validation:XValidation:rule="!has(self.duration) || !has(self.renewBefore) || duration(self.renewBefore) < duration(self.duration)",message="spec.tls.certificateTemplate.renewBefore must be shorter than duration"
type CertificateTemplate struct {
	// Duration is the requested lifetime of a leaf certificate, e.g. 2160h. cert-manager's
	// minimum is 1h.
	// +optional
	Duration *metav1.Duration `json:"duration,omitempty"`
	// RenewBefore is how long before expiry cert-manager renews, e.g. 720h.
	// +optional
	RenewBefore *metav1.Duration `json:"renewBefore,omitempty"`
	// +optional
	PrivateKey *PrivateKeyTemplate `json:"privateKey,omitempty"`
}

// PrivateKeyAlgorithm is the key algorithm of emitted certificates.
// +kubebuilder:validation:Enum=RSA;ECDSA;Ed25519
type PrivateKeyAlgorithm string

const (
	PrivateKeyRSA     PrivateKeyAlgorithm = "RSA"
	PrivateKeyECDSA   PrivateKeyAlgorithm = "ECDSA"
	PrivateKeyEd25519 PrivateKeyAlgorithm = "Ed25519"
)

// PrivateKeyTemplate is the key of emitted certificates; a fresh key is generated on every
// renewal.
// +kubebuilder:validation:XValidation:rule="!has(self.size) || self.size == 0 || (self.algorithm == 'RSA' && self.size >= 2048 && self.size <= 8192) || (self.algorithm == 'ECDSA' && self.size in [256, 384, 521])",message="spec.tls.certificateTemplate.privateKey.size must be 2048-8192 for RSA, 256, 384 or 521 for ECDSA, and unset for Ed25519"
type PrivateKeyTemplate struct {
	// Algorithm defaults to ECDSA.
	// +kubebuilder:default=ECDSA
	// +optional
	Algorithm PrivateKeyAlgorithm `json:"algorithm,omitempty"`
	// Size is the RSA modulus (default 2048) or the ECDSA curve (default 256).
	// +optional
	Size int `json:"size,omitempty"`
}

// SnapshotLocation is where a snapshot is stored: exactly one of s3 or pvc.
// +kubebuilder:validation:XValidation:rule="has(self.s3) != has(self.pvc)",message="exactly one of destination.s3 or destination.pvc must be set"
type SnapshotLocation struct {
	// S3 stores the snapshot in an S3-compatible object store.
	// +optional
	S3 *S3Location `json:"s3,omitempty"`
	// PVC stores the snapshot on a PersistentVolumeClaim.
	// +optional
	PVC *PVCLocation `json:"pvc,omitempty"`
	// Encryption encrypts each artifact with age (https://age-encryption.org) before it leaves
	// the agent, to the recipients of a Secret's keys; the artifact is named <name>.db.age
	// (.db.zst.age when compressed). Unset: stored as etcd wrote it. Addition.
	// +optional
	Encryption *SnapshotEncryption `json:"encryption,omitempty"`
	// Compression compresses each artifact with zstd before any encryption (<name>.db.zst).
	// Unset: Zstd when encryption is set (an encrypted artifact needs the operator's tools to
	// read anyway, and encrypted bytes no longer compress), None otherwise (a plain .db that
	// etcdutl reads as it is, as before). Addition.
	// +optional
	Compression SnapshotCompression `json:"compression,omitempty"`
}

// SnapshotCompression is how an artifact is compressed.
// +kubebuilder:validation:Enum=None;Zstd
type SnapshotCompression string

const (
	CompressionNone SnapshotCompression = "None"
	CompressionZstd SnapshotCompression = "Zstd"
)

// SnapshotEncryption names the age keys of encrypted artifacts.
// +kubebuilder:validation:XValidation:rule="size(self.secretRef.name) > 0",message="encryption.secretRef.name must name the Secret that holds the age keys"
type SnapshotEncryption struct {
	// SecretRef names a Secret in the same namespace. Its key "recipients" holds the age public
	// keys (age1…, one a line) new artifacts are encrypted to; its key "identities" the age
	// private keys (AGE-SECRET-KEY-1…, one a line, newest first) any of which may decrypt one.
	// Taking a snapshot needs a recipient (without "recipients", the newest identity's public
	// key is used); restoring and verifying need the identity. See docs/backup.md for keys and
	// their rotation.
	SecretRef corev1.LocalObjectReference `json:"secretRef"`
}

// EffectiveCompression is the compression artifacts stored at l get: Compression, else Zstd
// when encrypted and None when not.
func (l SnapshotLocation) EffectiveCompression() SnapshotCompression {
	switch {
	case l.Compression != "":
		return l.Compression
	case l.Encryption != nil:
		return CompressionZstd
	}
	return CompressionNone
}

// ArtifactName is the file a snapshot's artifact is stored as: <snapshot>.db, then .zst when
// compressed and .age when encrypted, in the order they are applied.
func (l SnapshotLocation) ArtifactName(snapshot string) string {
	name := snapshot + ".db"
	if l.EffectiveCompression() == CompressionZstd {
		name += ".zst"
	}
	if l.Encryption != nil {
		name += ".age"
	}
	return name
}

// S3Location is an object in an S3-compatible store.
type S3Location struct {
	// Endpoint is the S3 endpoint URL, e.g. https://s3.amazonaws.com or a MinIO or Ceph endpoint.
	// +kubebuilder:validation:MinLength=1
	Endpoint string `json:"endpoint"`
	// Bucket must exist; the operator does not create it.
	// +kubebuilder:validation:MinLength=1
	Bucket string `json:"bucket"`
	// Key: of a snapshot destination, an optional prefix under which the object
	// <prefix>/<snapshot-name>.db is written; of a restore source, the exact object key.
	// +optional
	Key string `json:"key,omitempty"`
	// CredentialsSecretRef names a Secret in the same namespace with AWS_ACCESS_KEY_ID and
	// AWS_SECRET_ACCESS_KEY.
	CredentialsSecretRef corev1.LocalObjectReference `json:"credentialsSecretRef"`
	// Region of the bucket; us-east-1 when empty.
	// +optional
	Region string `json:"region,omitempty"`
	// ForcePathStyle puts the bucket in the path instead of the host name (MinIO and Ceph
	// usually need it).
	// +optional
	ForcePathStyle bool `json:"forcePathStyle,omitempty"`
}

// PVCLocation is a path on a PersistentVolumeClaim in the same namespace.
type PVCLocation struct {
	// +kubebuilder:validation:MinLength=1
	ClaimName string `json:"claimName"`
	// SubPath: of a snapshot destination, an optional directory the file <snapshot-name>.db is
	// written in; of a restore source, the exact path of the snapshot file.
	// +optional
	SubPath string `json:"subPath,omitempty"`
}

// RestoreSource is the snapshot a cluster is restored from: an object in S3, a file on a PVC,
// or an EtcdSnapshot of the same namespace (whose artifact, checksum and keys are used).
// +kubebuilder:validation:XValidation:rule="(has(self.s3) ? 1 : 0) + (has(self.pvc) ? 1 : 0) + (has(self.snapshotRef) ? 1 : 0) == 1",message="exactly one of source.s3, source.pvc or source.snapshotRef must be set"
// +kubebuilder:validation:XValidation:rule="!has(self.encryption) || !has(self.snapshotRef)",message="source.encryption is for s3 and pvc sources: an EtcdSnapshot's artifact is read with the keys of the Secret it was written with"
type RestoreSource struct {
	// +optional
	S3 *S3Location `json:"s3,omitempty"`
	// +optional
	PVC *PVCLocation `json:"pvc,omitempty"`
	// SnapshotRef names a Complete EtcdSnapshot; its recorded sha256 is checked before anything
	// is restored. Addition.
	// +optional
	SnapshotRef *corev1.LocalObjectReference `json:"snapshotRef,omitempty"`
	// Encryption names the Secret whose identities (AGE-SECRET-KEY-…) decrypt an encrypted s3
	// or pvc source; compression and encryption are detected from the artifact's first bytes,
	// so a plain .db needs nothing. Addition.
	// +optional
	Encryption *SnapshotEncryption `json:"encryption,omitempty"`
}

// RestoreSpec names the snapshot a new cluster's seed is restored from. The seed's data
// directory is restored with the etcdutl of the cluster's own etcd version (a new cluster
// ID), after the checksum and the free space are checked; the other members then join it.
// +kubebuilder:validation:XValidation:rule="!has(self.source.s3) || (has(self.source.s3.key) && size(self.source.s3.key) > 0)",message="bootstrap.restore.source.s3.key must be the exact (non-empty) object key for a restore source"
// +kubebuilder:validation:XValidation:rule="!has(self.source.pvc) || (has(self.source.pvc.subPath) && size(self.source.pvc.subPath) > 0)",message="bootstrap.restore.source.pvc.subPath must be the exact (non-empty) snapshot file path for a restore source"
type RestoreSpec struct {
	Source RestoreSource `json:"source"`
}
