// Package legacy knows the legacy etcd operator, aenix-io/etcd-operator v0.4.x and its
// continuation on the v1alpha1 branch of cozystack/etcd-operator (API etcd.aenix.io/v1alpha1,
// one StatefulSet per cluster). It holds owned, minimal Go types of that API and a pure renderer
// of exactly the objects the legacy operator creates for a cluster: its StatefulSet, headless
// and client Services, cluster-state ConfigMap and PodDisruptionBudget.
//
// etcd-migrate reads legacy clusters with it (names, URLs, token and implicit flags must be
// adopted verbatim), and tests build legacy clusters with it the way the legacy operator would.
// The legacy operator's own module is not used: it would drag its controller and webhook
// dependencies in, and only its API and rendering rules matter here.
//
// Objects are read and written as unstructured and converted with FromUnstructured and
// ToUnstructured, so the types need no deepcopy and are not registered in any scheme.
// `make manifests` (hack/fixture-crds.sh) generates a CRD from them into
// internal/testenv/crds/legacy, for tests only.
//
// +kubebuilder:object:generate=false
// +groupName=etcd.aenix.io
// +versionName=v1alpha1
package legacy

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the legacy operator's API group and its only version.
var GroupVersion = schema.GroupVersion{Group: "etcd.aenix.io", Version: "v1alpha1"}

// GroupVersionKind is the legacy EtcdCluster's kind.
var GroupVersionKind = GroupVersion.WithKind("EtcdCluster")

// FromUnstructured converts a legacy EtcdCluster read as unstructured. It refuses objects of
// another kind, so a caller cannot silently misread one.
func FromUnstructured(u *unstructured.Unstructured) (*EtcdCluster, error) {
	if gvk := u.GroupVersionKind(); gvk != GroupVersionKind {
		return nil, fmt.Errorf("%s/%s is a %s, not a %s", u.GetNamespace(), u.GetName(), gvk, GroupVersionKind)
	}
	c := &EtcdCluster{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, c); err != nil {
		return nil, fmt.Errorf("converting %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	return c, nil
}

// ToUnstructured converts a legacy EtcdCluster for a client, setting its apiVersion and kind.
func ToUnstructured(c *EtcdCluster) (*unstructured.Unstructured, error) {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(c)
	if err != nil {
		return nil, fmt.Errorf("converting %s/%s: %w", c.Namespace, c.Name, err)
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetGroupVersionKind(GroupVersionKind)
	return u, nil
}
