// Package v1alpha1 holds minimal, owned Go types for the two Kamaji (kamaji.clastix.io/v1alpha1)
// kinds this project touches: DataStore, which the per-tenant chart and the tenant controller
// write, and TenantControlPlane, whose storage fields the tenant controller reads and sets.
//
// Kamaji's own Go module cannot be used: its post-1.0 releases carry no semver tags, so the
// module proxy serves only v1.0.0, which lacks dataStoreSchema and dataStoreUsername. Only the
// fields this project uses are typed here; the generated test CRDs preserve the rest of a real
// object as unknown fields so that Kamaji's own manifests apply to envtest. The compat test checks every typed field against
// Kamaji's real CRDs when they are available.
//
// `make manifests` generates CRDs from these types into internal/testenv/crds/kamaji, for envtest
// only: in a real cluster Kamaji's own chart installs the CRDs.
//
// +kubebuilder:object:generate=true
// +groupName=kamaji.clastix.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is Kamaji's group and version.
	GroupVersion = schema.GroupVersion{Group: "kamaji.clastix.io", Version: "v1alpha1"}

	// SchemeBuilder registers the types of this package with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the types of this package to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&DataStore{}, &DataStoreList{},
		&TenantControlPlane{}, &TenantControlPlaneList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
