package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DataStoreOverride puts one resource kind of a tenant on a dedicated DataStore (for example
// events), which becomes --etcd-servers-overrides.
type DataStoreOverride struct {
	Resource  string `json:"resource,omitempty"`
	DataStore string `json:"dataStore,omitempty"`
}

// KubernetesSpec is the tenant's Kubernetes; only the version is typed.
// +kubebuilder:pruning:PreserveUnknownFields
type KubernetesSpec struct {
	Version string `json:"version"`
	// Kubelet is Kamaji's kubelet settings, kept as is.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	Kubelet runtime.RawExtension `json:"kubelet"`
}

// TenantControlPlaneSpec holds the storage fields this project reads and writes; everything else
// (control plane deployment, network profile, addons) is preserved untouched.
// +kubebuilder:pruning:PreserveUnknownFields
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.dataStore) || has(self.dataStore)",message="unsetting the dataStore is not supported"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.dataStoreSchema) || has(self.dataStoreSchema)",message="unsetting the dataStoreSchema is not supported"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.dataStoreUsername) || has(self.dataStoreUsername)",message="unsetting the dataStoreUsername is not supported"
type TenantControlPlaneSpec struct {
	// DataStore names the DataStore; empty means the Kamaji manager's default. Setting it to
	// another DataStore of the same driver starts a migration.
	DataStore string `json:"dataStore,omitempty"`
	// DataStoreSchema is the etcd key prefix (without slashes). Immutable.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="changing the dataStoreSchema is not supported"
	DataStoreSchema string `json:"dataStoreSchema,omitempty"`
	// DataStoreUsername is the etcd user, the CN of the client certificate Kamaji mints. Immutable.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="changing the dataStoreUsername is not supported"
	DataStoreUsername  string              `json:"dataStoreUsername,omitempty"`
	DataStoreOverrides []DataStoreOverride `json:"dataStoreOverrides,omitempty"`
	// ControlPlane is Kamaji's control plane settings, kept as is.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	ControlPlane runtime.RawExtension `json:"controlPlane"`
	Kubernetes   KubernetesSpec       `json:"kubernetes"`
}

// SecretStatus is a generated Secret and the checksum of its content.
type SecretStatus struct {
	SecretName string `json:"secretName,omitempty"`
	Checksum   string `json:"checksum,omitempty"`
}

// CertificateStatus is the datastore client certificate Kamaji minted for the tenant.
type CertificateStatus struct {
	SecretName string       `json:"secretName,omitempty"`
	Checksum   string       `json:"checksum,omitempty"`
	LastUpdate *metav1.Time `json:"lastUpdate,omitempty"`
}

// SetupStatus is the schema (etcd prefix) and user Kamaji created on the datastore.
type SetupStatus struct {
	Schema     string       `json:"schema,omitempty"`
	User       string       `json:"user,omitempty"`
	Checksum   string       `json:"checksum,omitempty"`
	LastUpdate *metav1.Time `json:"lastUpdate,omitempty"`
}

// StorageStatus says which datastore a tenant really uses.
type StorageStatus struct {
	Driver        string             `json:"driver,omitempty"`
	DataStoreName string             `json:"dataStoreName,omitempty"`
	Config        *SecretStatus      `json:"config,omitempty"`
	Setup         *SetupStatus       `json:"setup,omitempty"`
	Certificate   *CertificateStatus `json:"certificate,omitempty"`
}

// KubernetesVersionStatus is the tenant's running version and its provisioning state.
type KubernetesVersionStatus struct {
	Version string `json:"version,omitempty"`
	// Status is Kamaji's state of the control plane; "Migrating" while a DataStore change copies data.
	// +kubebuilder:validation:Enum=Unknown;Provisioning;CertificateAuthorityRotating;Upgrading;Migrating;Ready;NotReady;Sleeping;WriteLimited
	Status string `json:"status,omitempty"`
}

// KubernetesResourcesStatus holds the version status; the rest is preserved.
// +kubebuilder:pruning:PreserveUnknownFields
type KubernetesResourcesStatus struct {
	Version *KubernetesVersionStatus `json:"version,omitempty"`
}

// TenantControlPlaneStatus holds the storage and version status; the rest is preserved.
// +kubebuilder:pruning:PreserveUnknownFields
type TenantControlPlaneStatus struct {
	Storage             *StorageStatus             `json:"storage,omitempty"`
	KubernetesResources *KubernetesResourcesStatus `json:"kubernetesResources,omitempty"`
}

// TenantControlPlane is a tenant's Kubernetes control plane run by Kamaji.
//
// Write it only with patches (merge patch or server-side apply) of the fields typed here: decoding
// into this struct drops every field it does not type, so an Update would erase Kamaji's settings.
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=tcp,categories=kamaji
// +kubebuilder:subresource:status
type TenantControlPlane struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   TenantControlPlaneSpec    `json:"spec,omitempty"`
	Status *TenantControlPlaneStatus `json:"status,omitempty"`
}

// TenantControlPlaneList is a list of TenantControlPlanes.
// +kubebuilder:object:root=true
type TenantControlPlaneList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TenantControlPlane `json:"items"`
}
