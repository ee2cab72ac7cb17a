package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Driver is the kind of database behind a DataStore.
// +kubebuilder:validation:Enum=etcd;MySQL;PostgreSQL;NATS
type Driver string

// DriverEtcd is the only driver this project writes.
const DriverEtcd Driver = "etcd"

// SecretReference points at one key of a Secret in any namespace: the Kamaji manager reads
// Secrets cluster-wide, and a DataStore, being cluster-scoped, has no namespace of its own.
type SecretReference struct {
	Name      string `json:"name,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	// KeyPath is the key inside the Secret's data.
	// +kubebuilder:validation:MinLength=1
	KeyPath string `json:"keyPath"`
}

// ContentRef is either inline content (which wins) or a reference to a Secret key.
type ContentRef struct {
	Content         []byte           `json:"content,omitempty"`
	SecretReference *SecretReference `json:"secretReference,omitempty"`
}

// CertKeyPair is a certificate and, optionally, its private key.
type CertKeyPair struct {
	Certificate ContentRef  `json:"certificate"`
	PrivateKey  *ContentRef `json:"privateKey,omitempty"`
}

// ClientCertificate is the certificate Kamaji presents to the datastore.
type ClientCertificate struct {
	Certificate ContentRef `json:"certificate"`
	PrivateKey  ContentRef `json:"privateKey"`
}

// TLSConfig is how Kamaji talks TLS to the datastore. For etcd the CA's private key is needed:
// Kamaji signs a client certificate per TenantControlPlane with it.
type TLSConfig struct {
	CertificateAuthority CertKeyPair        `json:"certificateAuthority"`
	ClientCertificate    *ClientCertificate `json:"clientCertificate,omitempty"`
}

// BasicAuth is used by the SQL and NATS drivers, never for etcd.
type BasicAuth struct {
	Username ContentRef `json:"username"`
	Password ContentRef `json:"password"`
}

// DataStoreSpec is where a datastore is and how to reach it.
// The rules mirror Kamaji's own for the etcd driver, so envtest rejects what Kamaji would.
// +kubebuilder:validation:XValidation:rule="(self.driver == \"etcd\") ? (has(self.tlsConfig) && (has(self.tlsConfig.certificateAuthority.privateKey.secretReference) || has(self.tlsConfig.certificateAuthority.privateKey.content))) : true",message="certificateAuthority privateKey must have secretReference or content when driver is etcd"
// +kubebuilder:validation:XValidation:rule="(self.driver == \"etcd\") ? (has(self.tlsConfig) && has(self.tlsConfig.clientCertificate) && (has(self.tlsConfig.clientCertificate.certificate.secretReference) || has(self.tlsConfig.clientCertificate.certificate.content))) : true",message="clientCertificate must have secretReference or content when driver is etcd"
// +kubebuilder:validation:XValidation:rule="(self.driver == \"etcd\") ? (has(self.tlsConfig) && has(self.tlsConfig.clientCertificate) && (has(self.tlsConfig.clientCertificate.privateKey.secretReference) || has(self.tlsConfig.clientCertificate.privateKey.content))) : true",message="clientCertificate privateKey must have secretReference or content when driver is etcd"
type DataStoreSpec struct {
	// Driver is immutable.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="Datastore driver is immutable"
	Driver Driver `json:"driver"`
	// Endpoints are bare host:port pairs; Kamaji adds the scheme.
	// +kubebuilder:validation:MinItems=1
	Endpoints []string   `json:"endpoints"`
	BasicAuth *BasicAuth `json:"basicAuth,omitempty"`
	TLSConfig *TLSConfig `json:"tlsConfig,omitempty"`
}

// DataStoreStatus is what Kamaji reports about a DataStore.
type DataStoreStatus struct {
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// UsedBy lists the namespace/name of the TenantControlPlanes on this DataStore.
	UsedBy     []string           `json:"usedBy,omitempty"`
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	Ready      bool               `json:"ready"`
}

// DataStore is a database Kamaji can put tenant control planes on. Cluster-scoped: names are
// platform-wide (Cozystack names it after the tenant namespace).
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Driver",type=string,JSONPath=`.spec.driver`
// +kubebuilder:printcolumn:name="Ready",type=boolean,JSONPath=`.status.ready`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type DataStore struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   DataStoreSpec    `json:"spec,omitempty"`
	Status *DataStoreStatus `json:"status,omitempty"`
}

// DataStoreList is a list of DataStores.
// +kubebuilder:object:root=true
type DataStoreList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DataStore `json:"items"`
}
