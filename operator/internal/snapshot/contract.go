// Package snapshot holds what the snapshot and restore agents share with the controllers that
// build their Pods: the environment contract (this file), artifact names and URIs, the result
// the agents write to their termination log, the digest that checks etcd's own trailing hash,
// and the two stores (S3 and a directory on a PersistentVolumeClaim).
package snapshot

// Subcommands of the manager binary that run inside Pods.
const (
	CommandSnapshotAgent = "snapshot-agent"
	CommandRestoreAgent  = "restore-agent"
	CommandInstallTools  = "install-tools"
	// CommandInstallPeerFixtures copies a member's peer certificate to where etcd's
	// --peer-auto-tls keeps its own (see resources.peerFixturesInitContainer).
	CommandInstallPeerFixtures = "install-peer-fixtures"
	// CommandGuardDataDir refuses to let a tmpfs member's etcd start on an empty data dir once
	// EnvDataExpected is "true" (see resources.dataGuardInitContainer).
	CommandGuardDataDir = "guard-data-dir"
	// CommandStopEtcd stops the etcd of the member it names (SIGTERM), from an ephemeral
	// container sharing the etcd container's processes: the kubelet restarts it in the same Pod.
	CommandStopEtcd = "stop-etcd"
	// EnvDataExpected is the data guard's input, from the Pod's data-expected annotation.
	EnvDataExpected = "ETCD_DATA_EXPECTED"
	// ToolsBinary is the file name install-tools writes into its directory.
	ToolsBinary = "manager"
)

// Environment of the snapshot agent (`manager snapshot-agent`).
const (
	// EnvEtcdEndpoints are comma-separated client URLs in preference order (followers first,
	// the leader last); EnvEtcdMemberNames the EtcdMember names in the same order.
	EnvEtcdEndpoints   = "ETCD_ENDPOINTS"
	EnvEtcdMemberNames = "ETCD_MEMBER_NAMES"
	// TLS files; all optional, no CA means plaintext.
	EnvEtcdCAFile   = "ETCD_CA_FILE"
	EnvEtcdCertFile = "ETCD_CERT_FILE"
	EnvEtcdKeyFile  = "ETCD_KEY_FILE"
	// EnvEtcdUsername is optional; the password is read from the file EnvEtcdPasswordFile names.
	EnvEtcdUsername     = "ETCD_USERNAME"
	EnvEtcdPasswordFile = "ETCD_PASSWORD_FILE"
	// EnvSnapshotOwner is the EtcdSnapshot's UID: the owner recorded with the artifact.
	EnvSnapshotOwner = "SNAPSHOT_OWNER"
	// EnvSnapshotDest is DestS3 or DestPVC.
	EnvSnapshotDest = "SNAPSHOT_DEST"
	// EnvSnapshotAction is ActionSave (the default) or ActionDelete: delete the artifact this
	// owner wrote (an EtcdSnapshot with deletionPolicy Delete was deleted); no etcd is needed.
	EnvSnapshotAction = "SNAPSHOT_ACTION"
	// EnvPVCDir is the directory on the mounted claim (created if missing), EnvPVCFile the file
	// name in it; EnvPVCClaim and EnvPVCPath (the path within the claim) only form the URI.
	EnvPVCDir   = "PVC_DIR"
	EnvPVCFile  = "PVC_FILE"
	EnvPVCClaim = "PVC_CLAIM"
	EnvPVCPath  = "PVC_PATH"
	// EnvSnapshotCompression is v1alpha2.CompressionZstd or CompressionNone (the default).
	EnvSnapshotCompression = "SNAPSHOT_COMPRESSION"
)

// Environment of both agents.
const (
	// S3 location. EnvS3Key is the full object key; EnvS3Region defaults to DefaultS3Region and
	// EnvS3ForcePathStyle is "true" or "false".
	EnvS3Endpoint       = "S3_ENDPOINT"
	EnvS3Bucket         = "S3_BUCKET"
	EnvS3Key            = "S3_KEY"
	EnvS3Region         = "S3_REGION"
	EnvS3ForcePathStyle = "S3_FORCE_PATH_STYLE"
	// S3 credentials, from a Secret; never logged.
	EnvAWSAccessKeyID     = "AWS_ACCESS_KEY_ID"
	EnvAWSSecretAccessKey = "AWS_SECRET_ACCESS_KEY"
	// EnvTerminationLog is where the result line goes (default DefaultTerminationLog).
	EnvTerminationLog = "TERMINATION_LOG"
	// EnvEncryptionKeyDir is where the encryption Secret is mounted: its files identities and
	// recipients (v1alpha2.EncryptionIdentitiesKey, EncryptionRecipientsKey) hold age keys,
	// never logged. Set for the snapshot agent, artifacts are encrypted; for the restore agent,
	// its identities decrypt (encryption is detected from the artifact).
	EnvEncryptionKeyDir = "ENCRYPTION_KEY_DIR"
)

// Environment of the restore agent (`/tools/manager restore-agent` in the target etcd image).
const (
	EnvDataDir                  = "DATA_DIR"
	EnvEtcdName                 = "ETCD_NAME"
	EnvEtcdInitialCluster       = "ETCD_INITIAL_CLUSTER"
	EnvEtcdInitialClusterToken  = "ETCD_INITIAL_CLUSTER_TOKEN"
	EnvEtcdInitialAdvertisePeer = "ETCD_INITIAL_ADVERTISE_PEER_URLS"
	// EnvEtcdVersion is the target etcd version, e.g. 3.6.16 (a leading v is accepted).
	EnvEtcdVersion = "ETCD_VERSION"
	EnvEtcdutl     = "ETCDUTL"
	// EnvRestoreSource is DestS3 or DestPVC; for a PVC, EnvRestoreFile is the absolute path of
	// the snapshot file on the mounted (read-only) source claim.
	EnvRestoreSource = "RESTORE_SOURCE"
	EnvRestoreFile   = "RESTORE_FILE"
	// EnvRestoreChecksum is optional, "sha256:<hex>": the download must match it.
	EnvRestoreChecksum = "RESTORE_CHECKSUM"
	// EnvRestoreBumpRevision (an integer) and EnvRestoreMarkCompacted (true/false) become
	// etcdutl's --bump-revision and --mark-compacted; etcdutl wants both or neither.
	EnvRestoreBumpRevision  = "RESTORE_BUMP_REVISION"
	EnvRestoreMarkCompacted = "RESTORE_MARK_COMPACTED"
	// EnvRestoreVerifyOnly=true makes the restore agent only read the source through and check
	// it (checksum, etcd's trailer), writing nothing: what a rollback does before it stops any
	// member. No member variables are needed then.
	EnvRestoreVerifyOnly = "RESTORE_VERIFY_ONLY"
)

// Actions of the snapshot agent (EnvSnapshotAction).
const (
	ActionSave   = "save"
	ActionDelete = "delete"
)

// Destinations (EnvSnapshotDest) and sources (EnvRestoreSource).
const (
	DestS3  = "s3"
	DestPVC = "pvc"
)

// Defaults.
const (
	DefaultS3Region       = "us-east-1"
	DefaultTerminationLog = "/dev/termination-log"
	DefaultDataDir        = "/var/lib/etcd"
	DefaultEtcdutl        = "/usr/local/bin/etcdutl"
	// MaxResultBytes bounds the result line: the kubelet keeps 4096 bytes of a termination message.
	MaxResultBytes = 4096
)

// S3 user metadata written with an artifact (x-amz-meta-<key>). MetaOwner is the overwrite
// guard; the others let a retried agent report an artifact a previous attempt completed.
const (
	MetaOwner       = "etcd-snapshot-owner"
	MetaMember      = "etcd-snapshot-member"
	MetaMemberID    = "etcd-snapshot-member-id"
	MetaClusterID   = "etcd-snapshot-cluster-id"
	MetaRevision    = "etcd-snapshot-revision"
	MetaEtcdVersion = "etcd-snapshot-etcd-version"
	MetaStartTime   = "etcd-snapshot-start-time"
)

// OwnerSuffix names the sidecar beside a PVC artifact that records its owner: <file>.owner.
const OwnerSuffix = ".owner"

// Phase is a result's phase.
type Phase string

const (
	PhaseComplete Phase = "Complete" // snapshot stored and verified
	PhaseRestored Phase = "Restored" // data directory restored
	PhaseVerified Phase = "Verified" // restore, verify only: the source reads through intact
	PhaseSkipped  Phase = "Skipped"  // restore: the data directory already has a member
	PhaseDeleted  Phase = "Deleted"  // delete: the artifact is gone (or was never there)
	PhaseFailed   Phase = "Failed"
)

// Reason says why an agent failed.
type Reason string

const (
	// Snapshot agent.
	ReasonEtcdUnreachable    Reason = "EtcdUnreachable"    // no endpoint could stream a snapshot
	ReasonAuthFailed         Reason = "AuthFailed"         // etcd refused the user, password or permission
	ReasonCredentialsMissing Reason = "CredentialsMissing" // etcd or S3 credentials are needed but absent
	ReasonArtifactExists     Reason = "ArtifactExists"     // another snapshot owns the destination
	// Both agents.
	ReasonEndpointUnreachable Reason = "EndpointUnreachable" // S3 endpoint: connect, DNS or TLS failed
	ReasonAccessDenied        Reason = "AccessDenied"        // S3 refused the keys or the operation
	ReasonBucketNotFound      Reason = "BucketNotFound"
	ReasonNoSpace             Reason = "NoSpace"
	ReasonChecksumMismatch    Reason = "ChecksumMismatch"
	ReasonFailed              Reason = "Failed" // anything else
	// ReasonEncryptionKeyMissing: the mounted encryption Secret has no usable key for the job.
	ReasonEncryptionKeyMissing Reason = "EncryptionKeyMissing"
	// ReasonDecryptionFailed: an encrypted artifact and no identity, or none that matches.
	ReasonDecryptionFailed Reason = "DecryptionFailed"
	// Restore agent.
	ReasonSourceNotFound          Reason = "SourceNotFound"
	ReasonSnapshotNewerThanTarget Reason = "SnapshotNewerThanTarget"
	ReasonUnsupported             Reason = "Unsupported"
	ReasonEtcdutlFailed           Reason = "EtcdutlFailed"
)

// SnapshotResult is the snapshot agent's result line. A Complete result has every field but
// Reason and Message; a Failed one only Phase, Reason and Message.
type SnapshotResult struct {
	Phase Phase `json:"phase"`
	// URI is s3://<bucket>/<key> or pvc://<claim>/<path>.
	URI       string `json:"uri,omitempty"`
	SizeBytes int64  `json:"sizeBytes,omitempty"`
	// Checksum is "sha256:<hex>" of the whole artifact as stored (etcd's trailing hash
	// included; compressed and encrypted when it is).
	Checksum string `json:"checksum,omitempty"`
	// Compression is v1alpha2.CompressionZstd or CompressionNone; Recipients, set when the
	// artifact is encrypted, name whom it was encrypted to (artifact.RecipientNames).
	Compression string   `json:"compression,omitempty"`
	Recipients  []string `json:"recipients,omitempty"`
	// Member is the EtcdMember streamed from; MemberID and ClusterID are 16 hex digits.
	Member    string `json:"member,omitempty"`
	MemberID  string `json:"memberID,omitempty"`
	ClusterID string `json:"clusterID,omitempty"`
	// Revision is the member's revision just before the stream opened: every write up to it
	// is in the snapshot.
	Revision    int64  `json:"revision,omitempty"`
	EtcdVersion string `json:"etcdVersion,omitempty"`
	// StartTime and CompletionTime are RFC 3339 (UTC).
	StartTime      string `json:"startTime,omitempty"`
	CompletionTime string `json:"completionTime,omitempty"`
	Reason         Reason `json:"reason,omitempty"`
	Message        string `json:"message,omitempty"`
}

// RestoreResult is the restore agent's result line.
type RestoreResult struct {
	Phase Phase `json:"phase"`
	// Revision is the snapshot's revision as etcdutl reports it (before any bump).
	Revision  int64  `json:"revision,omitempty"`
	SizeBytes int64  `json:"sizeBytes,omitempty"`
	Checksum  string `json:"checksum,omitempty"`
	Reason    Reason `json:"reason,omitempty"`
	Message   string `json:"message,omitempty"`
}
