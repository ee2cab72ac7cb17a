package v1alpha2

// Label keys. Operator-owned keys win over spec.additionalMetadata on collision.
const (
	// LabelPrefix is the prefix of every label and annotation key the operator owns.
	LabelPrefix = "etcd-operator.cozystack.io/"
	// LabelCluster names the EtcdCluster an object belongs to; it is the cluster's selector.
	LabelCluster = LabelPrefix + "cluster"
	// LabelRole is set to RoleVoter on the Pods of voting members; the PDB selects on it.
	LabelRole = LabelPrefix + "role"
	// RoleVoter is the value of LabelRole for voting members.
	RoleVoter = "voter"

	LabelAppName      = "app.kubernetes.io/name"
	LabelAppInstance  = "app.kubernetes.io/instance"
	LabelAppManagedBy = "app.kubernetes.io/managed-by"
	LabelAppComponent = "app.kubernetes.io/component"

	// AppName is the value of LabelAppName on every member Pod.
	AppName = "etcd"
	// ManagedBy is the value of LabelAppManagedBy on every object the operator creates.
	ManagedBy = "etcd-operator"
)

// DefaultLeaderElectionID is the Lease, in the operator's namespace, through which its replicas
// elect the active one unless the manager's --leader-election-id names another (the Cozystack
// package names the Lease of the operator it replaces).
const DefaultLeaderElectionID = "etcd-operator.cozystack.io"

// AnnotationInitialClusterState on a member Pod feeds etcd's ETCD_INITIAL_CLUSTER_STATE through
// the downward API. The kubelet resolves it at every container start, so once the cluster has
// formed the operator flips a seed's Pod to "existing": a seed restarted in place with a wiped
// data dir then fails loudly instead of bootstrapping an empty new cluster.
const AnnotationInitialClusterState = LabelPrefix + "initial-cluster-state"

// AnnotationForceNewCluster on a member Pod feeds etcd's ETCD_FORCE_NEW_CLUSTER the same way:
// "true" while the member's spec.forceNewCluster is set, "false" once it is cleared. A flag on
// the command line would stay on the Pod and, at the survivor's next container restart, force
// a one-member cluster again out of a cluster that has grown back.
const AnnotationForceNewCluster = LabelPrefix + "force-new-cluster"

// AnnotationDataExpected on a tmpfs member's Pod feeds its data-guard init container the same
// way: "true" once the member is a voter whose etcd has run (it has a member ID). A Pod
// restarted on an empty memory volume (its node rebooted) must not start etcd then: etcd would
// rejoin under the member's old ID and vote without the writes it acknowledged, and a majority
// rebooted at once would elect a leader that lost them, bypassing spec.quorumLoss.
const AnnotationDataExpected = LabelPrefix + "data-expected"

// AnnotationTLSHash on a member Pod is a hash of the content of the Secrets the Pod mounts (the
// active TLS Secrets), as the member controller last read them. A real kubelet rewrites a running
// Pod's Secret volumes at the Pod's periodic sync (its syncFrequency, 1 min plus jitter) or when the
// Pod object changes; changing this annotation when a renewed certificate is copied into those
// Secrets makes members serve it within seconds instead of a minute or more. It is metadata, not
// part of the Pod's revision: nothing restarts.
const AnnotationTLSHash = LabelPrefix + "tls-hash"

// AnnotationRestoreRefused on a seed EtcdMember records a restore that can never succeed from
// its source as it is (a checksum mismatch, a snapshot of a newer etcd, an image without a
// usable etcdutl), as JSON {revision, reason, message}: its Pod is deleted and not recreated
// while the member's Pod revision is the one refused, so nothing loops. A change of the
// template (spec.version) tries again; so does removing the annotation.
const AnnotationRestoreRefused = LabelPrefix + "restore-refused"

// AnnotationUserMetadata on an object the operator created records, as JSON {labels, annotations},
// the keys spec.additionalMetadata put there: a key later removed from the spec is removed from
// the object, and keys others set are never touched.
const AnnotationUserMetadata = LabelPrefix + "additional-metadata"

// AnnotationAllowDeletion set to "true" on an EtcdMember or a member's PVC lets a user delete
// it past the operator chart's deletion-protection admission policy (which otherwise admits
// only the operator, the garbage collector and the namespace controller). Deleting an
// EtcdMember removes its etcd member through the operator's finalizer; deleting a PVC loses the
// member's data, and the operator replaces it when quorum allows.
const AnnotationAllowDeletion = LabelPrefix + "allow-deletion"

// Rolling-update annotations. A Pod records the revision of the template it was built from; the
// cluster controller grants one member at a time the right to restart its Pod into the new
// revision. Both live on objects, so a rollout resumes where it was after an operator restart.
const (
	// AnnotationPodRevision on a member Pod is the revision of its spec (resources.PodRevision).
	AnnotationPodRevision = LabelPrefix + "pod-revision"
	// AnnotationRolloutRevision on an EtcdMember lets the member controller replace a Pod whose
	// revision differs by one of this revision.
	AnnotationRolloutRevision = LabelPrefix + "rollout-revision"
)

// ComponentTrustBundle is the LabelAppComponent of a cluster's trust bundle ConfigMaps.
const ComponentTrustBundle = "trust-bundle"

// Backups.
const (
	// LabelBackupSchedule names the EtcdBackupSchedule that created an EtcdSnapshot.
	LabelBackupSchedule = LabelPrefix + "backup-schedule"
	// LabelDefragSchedule names the EtcdDefragSchedule that created an EtcdDefrag.
	LabelDefragSchedule = LabelPrefix + "defrag-schedule"
	// LabelSnapshot names the EtcdSnapshot an agent Pod works for.
	LabelSnapshot = LabelPrefix + "snapshot"
	// ComponentSnapshotAgent is the LabelAppComponent of the Pods that take and delete snapshots.
	ComponentSnapshotAgent = "snapshot-agent"
	// AnnotationRestoring on an EtcdCluster names the EtcdRestore rolling it back; while it is
	// set, the cluster controller changes nothing and member finalizers leave etcd alone.
	AnnotationRestoring = LabelPrefix + "restoring"
	// AnnotationAdopting on an EtcdCluster says etcd-migrate is adopting it from the legacy
	// operator (its value names the tool); while it is set the cluster and member controllers
	// change nothing, so a half-adopted cluster is never acted on.
	AnnotationAdopting = LabelPrefix + "adopting"
	// AnnotationAdoptedFrom on an EtcdCluster records what it was adopted from:
	// "<apiVersion>/<kind>/<namespace>/<name>/<uid>" of the legacy object.
	AnnotationAdoptedFrom = LabelPrefix + "adopted-from"
	// SnapshotArtifactFinalizer makes the deletion of an EtcdSnapshot with deletionPolicy
	// Delete wait until its artifact is deleted.
	SnapshotArtifactFinalizer = LabelPrefix + "artifact-cleanup"
	// AgentContainer is the container name of snapshot agent Pods.
	AgentContainer = "agent"
	// RestoreContainer and ToolsContainer are the seed's init containers of a restore.
	RestoreContainer = "restore"
	ToolsContainer   = "install-tools"
	// PeerFixturesContainer installs the peer certificate for auto-TLS to present while peers
	// move from auto-TLS to certificates.
	PeerFixturesContainer = "peer-fixtures"
	// DataGuardContainer is a tmpfs member's first init container: it refuses an empty data
	// dir once AnnotationDataExpected says "true" (exiting DataGuardRefusedExitCode).
	DataGuardContainer = "data-guard"
	// ForceNewClusterContainer prefixes the ephemeral container that stops a tmpfs survivor's
	// etcd so that it restarts in the same Pod with --force-new-cluster (a quorum-loss rebuild).
	ForceNewClusterContainer = "force-new-cluster"
	// DataGuardRefusedExitCode is how the data guard says "the data is gone", apart from any
	// other failure of the container: only this code marks the member's data lost.
	DataGuardRefusedExitCode = 3
	// AnnotationQuorumLoss on an EtcdRestore says the cluster controller made it to recover a
	// cluster that lost quorum for good: no safety snapshot can be taken.
	AnnotationQuorumLoss = LabelPrefix + "quorum-loss"
	// LabelRestore on a seed names the EtcdRestore that created it.
	LabelRestore = LabelPrefix + "restore"
	// AnnotationSuperseded on an EtcdSnapshot in flight asks for it to be stopped and Failed
	// (a schedule with concurrencyPolicy Replace started a newer one).
	AnnotationSuperseded = LabelPrefix + "superseded"
	// RollbackRevisionBump is how far revisions jump in an in-place rollback: far above any the
	// cluster handed out, so no watcher takes a restored revision for one it already saw.
	RollbackRevisionBump = 1_000_000_000
)

// Finalizers.
const (
	// MemberCleanupFinalizer makes the deletion of an EtcdMember wait for MemberRemove.
	MemberCleanupFinalizer = LabelPrefix + "member-cleanup"
	// RollbackHandBackFinalizer makes the deletion of an EtcdRestore that has taken its cluster
	// over wait until the cluster is handed back with a seed: deleted in between, the cluster
	// would be left with no members.
	RollbackHandBackFinalizer = LabelPrefix + "hand-back"
)

// Condition types of EtcdCluster.
const (
	ConditionAvailable   = "Available"
	ConditionProgressing = "Progressing"
	ConditionDegraded    = "Degraded"
)

// Condition types of EtcdMember.
const (
	ConditionReady          = "Ready"
	ConditionVersionDrifted = "VersionDrifted"
	// ConditionVolumeResized on an EtcdMember with a PVC: True once the claim's capacity reaches
	// spec.storage.size; False while it grows (Resizing) or when its StorageClass does not allow
	// expansion (ExpansionNotSupported).
	ConditionVolumeResized = "VolumeResized"
)

// Condition reasons. The set matches the public v1alpha2 operator's, plus this project's additions.
const (
	ReasonQuorumHealthy      = "QuorumHealthy"
	ReasonQuorumAvailable    = "QuorumAvailable"
	ReasonQuorumLost         = "QuorumLost"
	ReasonClusterDiscovered  = "ClusterDiscovered"
	ReasonClusterUnreachable = "ClusterUnreachable"
	ReasonPaused             = "Paused"
	ReasonBootstrapFailed    = "BootstrapFailed"
	ReasonDeadlineExceeded   = "DeadlineExceeded"
	ReasonMembersUnhealthy   = "MembersUnhealthy"
	ReasonInitialSnapshot    = "InitialSnapshot"
	ReasonSpecChanged        = "SpecChanged"
	ReasonWaitingForSeed     = "WaitingForSeed"
	ReasonRetryAfterDeadline = "RetryAfterDeadline"
	ReasonReconciled         = "Reconciled"
	// ReasonActionFailed (Progressing) and the Warning Event ReasonReconcileFailed: a pass's
	// step failed with an error etcd does not ask to retry; the message names the step.
	ReasonActionFailed              = "ActionFailed"
	ReasonReconcileFailed           = "ReconcileFailed"
	ReasonCertManagerNotInstalled   = "CertManagerNotInstalled"
	ReasonAuthRequiredNotConfigured = "AuthRequiredNotConfigured"
	// ReasonAuthCredentialsRejected: etcd refused the operator's credentials and root's password
	// from spec.auth.rootCredentialsSecretRef (Degraded, Event; retried every 10 s).
	ReasonAuthCredentialsRejected = "AuthCredentialsRejected"

	// Additions.
	ReasonAllMembersLost = "AllMembersLost"
	ReasonScalingUp      = "ScalingUp"
	ReasonScalingDown    = "ScalingDown"
	ReasonBootstrapping  = "Bootstrapping"
	ReasonReplacing      = "ReplacingMember"
	// ReasonRollingUpdate: members are restarted one at a time into a new Pod template (a version
	// upgrade or any other template change).
	ReasonRollingUpdate = "RollingUpdate"
	// ReasonVersionSkew: the rollout holds because a member runs a version spec.version cannot
	// be reached from in one step (a minor skipped over two edits, or a downgrade); Event, and
	// the Progressing condition's message.
	ReasonVersionSkew = "VersionSkew"
	// ReasonWaitingForSnapshot: a minor upgrade waits until every member has taken a snapshot on
	// the minor it was upgraded to (Event, and the Progressing condition's message).
	ReasonWaitingForSnapshot = "WaitingForSnapshot"
	// ReasonDowngrading: a one-minor downgrade runs etcd's procedure: the Event when the
	// downgrade is enabled, and Progressing while the rollout waits for every member's storage
	// to be migrated to the older minor. ReasonDowngradeCancelled: the Event when a downgrade
	// spec.version no longer asks for is cancelled.
	ReasonDowngrading        = "Downgrading"
	ReasonDowngradeCancelled = "DowngradeCancelled"
	// ReasonCertificateInvalid: a member's server or peer certificate does not fit it (a
	// missing SAN or usage, a broken chain, expiry); its Pod is not started. On the member's
	// Ready condition and the cluster's Degraded condition.
	ReasonCertificateInvalid = "CertificateInvalid"
	// ReasonAuthCredentialsMissing: spec.auth is enabled but its Secret, or the Secret's
	// password key, does not exist (Degraded, Event); auth is enabled once it does.
	ReasonAuthCredentialsMissing = "AuthCredentialsMissing"
	// ReasonAuthEnabled: the operator turned etcd auth on (Event).
	ReasonAuthEnabled = "AuthEnabled"
	// ReasonAuthPasswordChanged: root's password in etcd was changed to the Secret's (Event).
	ReasonAuthPasswordChanged = "AuthPasswordChanged"
	// ReasonWaitingForCertificate: a member's TLS Secret does not exist yet (cert-manager has
	// not issued it, or a BYO Secret is missing); its Pod is not started.
	ReasonWaitingForCertificate = "WaitingForCertificate"
	// ReasonTrustWidened: a plane's trust bundle gained a CA (a CA rotation began); members are
	// restarted onto it one at a time before any certificate from that CA is served (Event).
	ReasonTrustWidened = "TrustWidened"
	// ReasonCertificateApplied: a renewed or re-issued certificate is now served; every member
	// already trusts its CA, so nothing restarts (Event).
	ReasonCertificateApplied = "CertificateApplied"
	// ReasonTrustNarrowed: CAs no certificate or source needs left a plane's trust bundle (the end
	// of a CA rotation); members are restarted onto the narrower bundle one at a time (Event).
	ReasonTrustNarrowed = "TrustNarrowed"
	// ReasonCertificateHeld: a Secret's new certificate is not served because it would break a
	// member or chains to no CA of its Secret; the previous certificate stays (Warning Event).
	ReasonCertificateHeld = "CertificateHeld"

	// ReasonEnablingClientTLS: spec.tls.client was added to a running plaintext cluster; members
	// are restarted one at a time to serve TLS beside plaintext on the client port (Event).
	ReasonEnablingClientTLS = "EnablingClientTLS"
	// ReasonClientTLSServing: every member serves TLS; the operator dials with TLS and members
	// are restarted once more without the plaintext listener (Event).
	ReasonClientTLSServing = "ClientTLSServing"

	// ReasonMovingPeersOffAutoTLS: spec.tls.peer moved from autoTLS to certificates; members are
	// restarted one at a time to present the certificates while still on auto-TLS (Event).
	ReasonMovingPeersOffAutoTLS = "MovingPeersOffAutoTLS"
	// ReasonPeerCertificatesPresented: every member presents the peer certificates; members are
	// restarted once more to verify their peers (peer mTLS) (Event).
	ReasonPeerCertificatesPresented = "PeerCertificatesPresented"

	// ReasonRestoreFailed: the seed's restore from a snapshot failed for a cause the restore
	// agent could not name (its message follows); nothing is started from it. A named cause is
	// its own reason (RestoreFailureReasons). On the member's Ready and the cluster's Degraded
	// condition, and an Event on both.
	ReasonRestoreFailed = "RestoreFailed"
	// ReasonRestoring: the seed is being restored from a snapshot, or the cluster rolled back.
	ReasonRestoring = "Restoring"
	// ReasonRestoreSourceInvalid: spec.bootstrap.restore names an EtcdSnapshot that does not
	// exist or is not Complete, or a Secret the source needs is missing (Degraded, Event); the
	// seed is not created until it is.
	ReasonRestoreSourceInvalid = "RestoreSourceInvalid"
	// ReasonQuorumRecovered: the operator rebuilt a cluster that had lost quorum for good
	// (spec.quorumLoss), from a survivor or the latest snapshot (Event).
	ReasonQuorumRecovered = "QuorumRecovered"
	// ReasonQuorumLostForGood: a majority of the voters lost their data; with spec.quorumLoss
	// Wait the operator reports it and changes nothing.
	ReasonQuorumLostForGood = "QuorumLostForGood"

	// ReasonDataLost: a PVC member's claim is gone, being deleted or replaced, so its data is
	// lost for good; its Pod is not started on an empty claim (member's Ready condition).
	ReasonDataLost = "DataLost"

	// Volume resizing (EtcdMember's VolumeResized condition and Events).
	ReasonResized               = "Resized"
	ReasonResizing              = "Resizing"
	ReasonExpansionNotSupported = "ExpansionNotSupported"

	// ReasonImagePullFailed: a member's image cannot be pulled (most often a spec.version with no
	// such etcd release); on the member's Ready and the cluster's Degraded condition, and an Event.
	ReasonImagePullFailed = "ImagePullFailed"

	// EtcdMember reasons.
	ReasonPodReady            = "PodReady"
	ReasonPodNotReady         = "PodNotReady"
	ReasonDiscoveringMemberID = "DiscoveringMemberID"
	ReasonVersionMismatch     = "VersionMismatch"
	ReasonVersionMatched      = "VersionMatched"
)

// Keys of an encryption Secret (SnapshotEncryption.SecretRef).
const (
	// EncryptionIdentitiesKey holds age identities (AGE-SECRET-KEY-1…), one a line, newest first.
	EncryptionIdentitiesKey = "identities"
	// EncryptionRecipientsKey holds age recipients (age1…), one a line: whom artifacts are written to.
	EncryptionRecipientsKey = "recipients"
)

// Snapshot, schedule and restore reasons (the Ready condition of EtcdSnapshot,
// EtcdBackupSchedule and EtcdRestore).
const (
	ReasonSnapshotPending         = "Pending"
	ReasonAgentStarted            = "AgentStarted"
	ReasonSnapshotStored          = "SnapshotStored"
	ReasonClusterNotFound         = "ClusterNotFound"
	ReasonClusterNotReady         = "ClusterNotReady"
	ReasonAgentImageNotConfigured = "AgentImageNotConfigured"
	ReasonAgentLost               = "AgentLost"
	ReasonSuperseded              = "Superseded"
	// ReasonCredentialsMissing: the S3 credentials Secret or one of its keys is missing.
	ReasonCredentialsMissing = "CredentialsMissing"
	// ReasonDestinationInvalid: the destination PVC does not exist.
	ReasonDestinationInvalid = "DestinationInvalid"
	// ReasonEncryptionKeyMissing: the encryption Secret is missing, or holds no usable age key
	// for what is asked (a recipient to write, an identity to read).
	ReasonEncryptionKeyMissing = "EncryptionKeyMissing"
	// ReasonDecryptionFailed: the agent could not decrypt an artifact: no identity given, or none
	// of them is one it was encrypted to.
	ReasonDecryptionFailed = "DecryptionFailed"
	// Reasons the agent reports (operator/internal/snapshot): the store or etcd refused.
	ReasonEtcdUnreachable     = "EtcdUnreachable"
	ReasonEndpointUnreachable = "EndpointUnreachable"
	ReasonAccessDenied        = "AccessDenied"
	ReasonBucketNotFound      = "BucketNotFound"
	ReasonArtifactExists      = "ArtifactExists"
	ReasonNoSpace             = "NoSpace"
	ReasonChecksumMismatch    = "ChecksumMismatch"
	// ReasonSnapshotNewerThanTarget: the snapshot is of a newer etcd than the one restoring it.
	ReasonSnapshotNewerThanTarget = "SnapshotNewerThanTarget"
	ReasonSnapshotFailed          = "Failed"
	// ReasonAuthFailed: etcd refused the snapshot agent's user, password or permission.
	ReasonAuthFailed = "AuthFailed"
	// ReasonSourceNotFound: the restore source (S3 object or file on the PVC) does not exist.
	ReasonSourceNotFound = "SourceNotFound"
	// ReasonUnsupported: the restore source is not something this etcd can restore.
	ReasonUnsupported = "Unsupported"
	// ReasonEtcdutlFailed: etcdutl refused to restore the downloaded snapshot.
	ReasonEtcdutlFailed = "EtcdutlFailed"

	// Defragmentation (EtcdDefrag's Ready condition and its members' reasons).
	// ReasonClusterNotHealthy: the run waits until every member of the cluster is ready and
	// healthy and nothing else changes it (a rollout, a membership change, a restore).
	ReasonClusterNotHealthy = "ClusterNotHealthy"
	// ReasonAnotherDefragRunning: an older EtcdDefrag of the same cluster runs; one at a time.
	ReasonAnotherDefragRunning = "AnotherDefragRunning"
	ReasonDefragmenting        = "Defragmenting"
	ReasonDefragmented         = "Defragmented"
	// ReasonBelowThreshold: the member's reclaimable space is below the rule's threshold.
	ReasonBelowThreshold = "BelowThreshold"
	// ReasonRPCError and ReasonTimeout: etcd refused the member's defragmentation, or it took
	// longer than spec.memberTimeoutSeconds; the run fails.
	ReasonRPCError = "RPCError"
	ReasonTimeout  = "Timeout"
	// ReasonRunFailed: a member was not attempted because an earlier one failed the run.
	ReasonRunFailed = "RunFailed"
	// ReasonMemberGone: a planned member stopped running (removed, replaced) before its turn.
	ReasonMemberGone = "MemberGone"
	// ReasonAlarmDisarmed: a NOSPACE alarm was disarmed once the run reclaimed space (Event).
	ReasonAlarmDisarmed = "AlarmDisarmed"

	// Schedules.
	ReasonScheduled       = "Scheduled"
	ReasonInvalidSchedule = "InvalidSchedule"
	ReasonSuspended       = "Suspended"

	// Rollbacks.
	ReasonSafetySnapshot = "TakingSafetySnapshot"
	ReasonRolledBack     = "RolledBack"
	ReasonRestoreBusy    = "AnotherRestoreRunning"
	ReasonSourceNotReady = "SourceNotReady"
	// ReasonVerifyingSource: the source is being read through and checked; nothing is touched yet.
	ReasonVerifyingSource = "VerifyingSource"
	ReasonSafetyFailed    = "SafetySnapshotFailed"
	ReasonRollbackAborted = "Aborted"
)

// Member roles reported in EtcdCluster status.members.
const (
	MemberRoleLeader   = "Leader"
	MemberRoleFollower = "Follower"
	MemberRoleLearner  = "Learner"
)

// Defaults.
const (
	DefaultReplicas                = 3
	DefaultProgressDeadlineSeconds = 600
	DefaultStorageSize             = "1Gi"
	DefaultImageRepository         = "quay.io/coreos/etcd"
)

// Auth: etcd's users and the Secrets the operator reads and writes.
const (
	// RootUser and RootRole: the user spec.auth.rootCredentialsSecretRef's password is for
	// (or that spec.auth.passwordlessRoot creates without one), and etcd's built-in
	// all-powerful role.
	RootUser = "root"
	RootRole = "root"
	// OperatorUser is the operator's own etcd user (role root). It lets the operator rotate
	// root's password without knowing the old one, and survives out-of-band root changes.
	OperatorUser = "etcd-operator"
	// OperatorAuthSecretSuffix: the owned Secret <cluster>-operator-auth holds the operator
	// user's password and a salted hash (never the value) of the root password applied to etcd.
	OperatorAuthSecretSuffix = "-operator-auth"
)

// Ports every member listens on.
const (
	ClientPort  = 2379
	PeerPort    = 2380
	MetricsPort = 2381
)

// CEL messages. Each string is also written into a +kubebuilder:validation:XValidation marker in
// the types; TestCELMessagesMatchCRD keeps the two in step, and tests assert on these constants.
const (
	MsgVersionFormat            = "spec.version must be an etcd release in the form MAJOR.MINOR.PATCH, e.g. 3.6.16 (no leading v)"
	MsgVersionReachable         = "spec.version must be reachable in one step from the version every member runs (status.members[].version): the same minor, one minor up, or one minor down from 3.6 or later; let a running upgrade or downgrade finish before the next"
	MsgVersionPath              = "spec.version may change by any patch, one minor up, or one minor down from 3.6 or later (etcd's downgrade procedure), one minor at a time; skipping a minor, a major change and a downgrade below 3.5 are refused"
	MsgMemberReplicasOne        = "spec.replicas of an EtcdMember is always 1 (one member, one Pod; it exists for the /scale that PodDisruptionBudgets over member Pods resolve): scale the EtcdCluster's spec.replicas instead"
	MsgPauseMemory              = "spec.replicas=0 with spec.storage.medium=Memory is unsupported: pausing a memory-backed cluster wedges on resume. Delete and recreate the cluster instead."
	MsgMemorySizePositive       = "spec.storage.size must be > 0 when spec.storage.medium=Memory (the tmpfs sizeLimit cannot be zero)."
	MsgMediumImmutable          = "spec.storage.medium is immutable; delete and recreate the cluster to change the storage backend"
	MsgSizeNoShrink             = "spec.storage.size cannot be shrunk"
	MsgTLSClientImmutable       = "spec.tls.client can be added to a running cluster (its members are restarted one at a time into TLS) but not removed or changed; delete and recreate to remove or change it. spec.tls.certificateTemplate may be changed"
	MsgTLSPeerImmutable         = "spec.tls.peer cannot be added, removed or changed on an existing cluster, except from autoTLS to certificates (secretRef or certManager), which the operator rolls out without cutting any member off; enabling peer TLS on a plaintext cluster is not supported: delete and recreate. spec.tls.certificateTemplate may be changed"
	MsgIssuerKind               = "issuerRef.kind must be Issuer or ClusterIssuer for cert-manager.io issuers; set issuerRef.group to name an external issuer of another kind"
	MsgRenewBeforeDuration      = "spec.tls.certificateTemplate.renewBefore must be shorter than duration"
	MsgPrivateKeySize           = "spec.tls.certificateTemplate.privateKey.size must be 2048-8192 for RSA, 256, 384 or 521 for ECDSA, and unset for Ed25519"
	MsgStorageClassAddRemove    = "spec.storage.storageClassName cannot be added to or removed from an existing cluster; delete and recreate"
	MsgStorageClassImmutable    = "spec.storage.storageClassName is immutable post-create (a PVC's storageClassName itself is immutable); delete and recreate the cluster to change the StorageClass"
	MsgAuthNoDisable            = "spec.auth.enabled cannot be turned off once on: etcd keeps auth enabled in its data; delete and recreate the cluster to run without auth"
	MsgAuthRequiresClientTLS    = "spec.auth.enabled requires spec.tls.client (auth credentials must not cross a plaintext connection)"
	MsgAuthRequiresSecret       = "spec.auth.enabled requires spec.auth.rootCredentialsSecretRef (root's password) or spec.auth.passwordlessRoot (root reached only by a client certificate whose CN is root)"
	MsgAuthPasswordlessFixed    = "spec.auth.passwordlessRoot cannot be changed once auth is enabled: etcd keeps a root user's no-password option for as long as auth is on"
	MsgAuthRootExclusive        = "spec.auth.rootCredentialsSecretRef and spec.auth.passwordlessRoot are mutually exclusive: a passwordless root has no password to apply"
	MsgBootstrapAddRemove       = "spec.bootstrap cannot be added to or removed from an existing cluster; it is consulted only at first bootstrap"
	MsgBootstrapImmutable       = "spec.bootstrap is immutable post-create; it is consulted only at first bootstrap"
	MsgRestoreMemory            = "spec.bootstrap.restore is unsupported with spec.storage.medium=Memory: a tmpfs seed would re-restore the snapshot on every restart. Use persistent storage to restore."
	MsgClientTLSSource          = "exactly one of spec.tls.client.serverSecretRef or spec.tls.client.certManager must be set"
	MsgClientTLSOperatorSecret  = "spec.tls.client.operatorClientSecretRef cannot be combined with certManager; use certManager.operatorClientIssuerRef"
	MsgPeerTLSSource            = "exactly one of spec.tls.peer.secretRef, spec.tls.peer.certManager or spec.tls.peer.autoTLS must be set"
	MsgLayoutImmutable          = "spec.layout cannot be added, removed or changed: member Pods, peer URLs and clients are tied to the names it gives (etcd-migrate sets it when it adopts a cluster)"
	MsgLayoutServices           = "spec.layout.headlessServiceName and spec.layout.clientServiceName are set together and must differ"
	MsgLayoutSubPath            = "spec.layout.dataDirSubPath must be one relative path segment (letters, digits, '.', '_', '-'), not '.' or '..'"
	MsgSnapshotLocation         = "exactly one of destination.s3 or destination.pvc must be set"
	MsgRestoreSource            = "exactly one of source.s3, source.pvc or source.snapshotRef must be set"
	MsgRestoreEncryptionRef     = "source.encryption is for s3 and pvc sources: an EtcdSnapshot's artifact is read with the keys of the Secret it was written with"
	MsgEncryptionSecretRef      = "encryption.secretRef.name must name the Secret that holds the age keys"
	MsgSnapshotSpecImmutable    = "spec of an EtcdSnapshot is immutable; create a new EtcdSnapshot instead"
	MsgSnapshotClusterRef       = "spec.clusterRef.name must name the EtcdCluster to snapshot"
	MsgScheduleClusterRef       = "spec.clusterRef.name must name the EtcdCluster to back up"
	MsgDefragAllExclusive       = "rule.all cannot be combined with freeSpaceAbove/quotaUsageAbove/minReclaim"
	MsgDefragFreeSpacePositive  = "freeSpaceAbove must be greater than 0"
	MsgDefragMinReclaimPositive = "minReclaim must be greater than 0"
	MsgDefragMinReclaimQuota    = "minReclaim is only meaningful with quotaUsageAbove"
	MsgDefragMinReclaimBound    = "minReclaim must not exceed freeSpaceAbove"
	MsgDefragClusterRef         = "spec.clusterRef.name is required"
	MsgDefragSpecImmutable      = "spec of an EtcdDefrag is immutable; create a new EtcdDefrag instead"
	MsgDefragScheduleClusterRef = "spec.clusterRef.name must name the EtcdCluster to defragment"
	MsgDefragScheduleName       = "an EtcdDefragSchedule's name is at most 63 characters: it labels the runs it creates"
	MsgRestoreSpecImmutable     = "spec of an EtcdRestore is immutable; create a new EtcdRestore instead"
	MsgRestoreClusterRef        = "spec.clusterRef.name must name the EtcdCluster to roll back"
	MsgRestoreSafetySnapshot    = "spec.safetySnapshot.destination is required unless spec.source.snapshotRef is set (then the safety snapshot goes beside it)"
	MsgRollbackS3Key            = "spec.source.s3.key must be the exact (non-empty) object key"
	MsgRollbackPVCSubPath       = "spec.source.pvc.subPath must be the exact (non-empty) snapshot file path"
	MsgRestoreS3Key             = "bootstrap.restore.source.s3.key must be the exact (non-empty) object key for a restore source"
	MsgRestorePVCSubPath        = "bootstrap.restore.source.pvc.subPath must be the exact (non-empty) snapshot file path for a restore source"
	MsgImageRepositoryNoTag     = "spec.imageRepository must be a repository without a tag or digest; the tag is always v<spec.version>"
	MsgPriorityClassNameFormat  = "spec.priorityClassName must be a DNS subdomain name"
	MsgSnapshotNameLength       = "an EtcdSnapshot's name is at most 63 characters: it labels the snapshot's agent Pod"
	MsgScheduleNameLength       = "an EtcdBackupSchedule's name is at most 54 characters: each run's EtcdSnapshot is named <schedule>-<minute> (63 at most)"
	MsgRestoreNameLength        = "an EtcdRestore's name is at most 56 characters: its safety snapshot is named <restore>-safety (63 at most)"
	MsgClusterNameLength        = "an EtcdCluster's name is at most 56 characters: its client Service is named <cluster>-client, and a Service's name is at most 63"
	MsgClusterNameDots          = "an EtcdCluster's name cannot contain '.': it names its Services and its members' hostnames, which are DNS labels"
	MsgRetentionMaxAge          = "spec.retention.maxAge must be a positive duration, e.g. 168h"
)

// RestoreFailureReasons are the reasons of a seed member's Ready condition, and of its cluster's
// Degraded condition and Events, when its restore from a snapshot failed: one per cause the
// restore agent names, RestoreFailed for any other.
var RestoreFailureReasons = []string{
	ReasonRestoreFailed, ReasonCredentialsMissing, ReasonEndpointUnreachable, ReasonAccessDenied, ReasonBucketNotFound,
	ReasonSourceNotFound, ReasonNoSpace, ReasonChecksumMismatch, ReasonSnapshotNewerThanTarget, ReasonUnsupported,
	ReasonEtcdutlFailed, ReasonEncryptionKeyMissing, ReasonDecryptionFailed,
}

// ReasonPodMovedOffNode (Event on an EtcdMember): its Pod was on a node marked
// node.kubernetes.io/out-of-service and its volume can follow, so the Pod was force-deleted to
// restart on another node with the same data.
const ReasonPodMovedOffNode = "PodMovedOffNode"
