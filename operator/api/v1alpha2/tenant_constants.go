package v1alpha2

// The tenant controller (tenants/) gives a Kamaji TenantControlPlane its own EtcdCluster and
// DataStore. These are the keys users write on TenantControlPlanes and namespaces, and the
// ones the controller writes on what it creates.
const (
	// AnnotationTenantEtcd on a TenantControlPlane, or the same key as a label on its namespace:
	// "true" gives the TCP its own etcd, "false" never does. The TCP's annotation wins over the
	// namespace's label, which wins over the controller's cluster-wide default.
	AnnotationTenantEtcd = LabelPrefix + "tenant-etcd"
	// AnnotationTenantEtcdSpec on a TenantControlPlane: a partial EtcdCluster spec (YAML or JSON),
	// merged over the cluster-wide template as a JSON merge patch (RFC 7386).
	AnnotationTenantEtcdSpec = LabelPrefix + "tenant-etcd-spec"
	// AnnotationTenantEtcdBackup on a TenantControlPlane: a partial EtcdBackupSchedule spec (YAML
	// or JSON) merged over the cluster-wide backup template as a JSON merge patch; null turns the
	// TCP's backups off.
	AnnotationTenantEtcdBackup = LabelPrefix + "tenant-etcd-backup"
	// AnnotationTenantDeletionPolicy on a TenantControlPlane: TenantDeletionDelete or
	// TenantDeletionRetain, for its etcd and DataStore once the TCP is gone; empty takes the
	// controller's default. It is copied onto the EtcdCluster, which outlives the TCP.
	AnnotationTenantDeletionPolicy = LabelPrefix + "tenant-etcd-deletion-policy"
	// AnnotationTenantEtcdCluster is written on a served TenantControlPlane: its EtcdCluster.
	AnnotationTenantEtcdCluster = LabelPrefix + "tenant-etcd-cluster"
	// AnnotationTenantEtcdState is written on a served TenantControlPlane: "Ready", or the
	// reason it is not followed by ": " and a message.
	AnnotationTenantEtcdState = LabelPrefix + "tenant-etcd-state"
	// AnnotationTenant on what the controller creates: the TCP's namespace/name.
	AnnotationTenant = LabelPrefix + "tenant"

	// LabelTenantNamespace and LabelTenantName on everything the controller creates name the
	// TenantControlPlane it was made for; LabelAppManagedBy is ManagedByTenants.
	LabelTenantNamespace = LabelPrefix + "tenant-namespace"
	LabelTenantName      = LabelPrefix + "tenant-name"
	// ManagedByTenants is the value of LabelAppManagedBy on what the tenant controller creates.
	ManagedByTenants = "etcd-operator-tenants"

	TenantDeletionDelete = "Delete"
	TenantDeletionRetain = "Retain"
	TenantStateReady     = "Ready"
)

// Reasons of the tenant controller's Events and of AnnotationTenantEtcdState.
const (
	ReasonTenantEtcdCreated  = "TenantEtcdCreated"
	ReasonTenantEtcdReady    = "TenantEtcdReady"
	ReasonTenantEtcdNotReady = "TenantEtcdNotReady"
	ReasonDataStoreCreated   = "DataStoreCreated"
	ReasonDataStoreSet       = "DataStoreSet"
	// ReasonDataStoreMigration: a TCP that had served from Kamaji's default DataStore was moved
	// to its own; Kamaji migrates its keys.
	ReasonDataStoreMigration = "DataStoreMigration"
	// ReasonDataStoreSwitchPending: a TCP that has served from Kamaji's default DataStore stays
	// there until its own etcd is Available.
	ReasonDataStoreSwitchPending = "DataStoreSwitchPending"
	ReasonForeignDataStore       = "ForeignDataStore"
	ReasonTenantTemplateInvalid  = "TemplateInvalid"
	ReasonTenantApplyFailed      = "ApplyFailed"
	ReasonTenantNameTooLong      = "NameTooLong"
	ReasonDataStoreInUse         = "DataStoreInUse"
	ReasonTenantEtcdDeleted      = "TenantEtcdDeleted"
	ReasonTenantEtcdRetained     = "TenantEtcdRetained"
)
