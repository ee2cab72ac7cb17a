// Package v1beta1 holds owned Go types for VictoriaMetrics' VMServiceScrape
// (operator.victoriametrics.com/v1beta1), from which `make manifests` (hack/fixture-crds.sh)
// generates a CRD into internal/testenv/crds/victoriametrics, so that the charts' VMServiceScrapes
// are validated by envtest's apiserver like every other rendered object.
//
// The VictoriaMetrics operator's Go module is not served by the module proxy, so neither its
// types nor its CRD YAML can be used. These types follow the field names, types, enums and
// required fields of its published CRD for the fields a scrape of a metrics Service uses
// (selector, namespaceSelector, discoveryRole, jobLabel, target labels, and the endpoint's port,
// path, scheme, interval, timeout and honor flags); the endpoint's auth, TLS and relabelling
// fields are left out, so an object that uses them is refused here, never passed by mistake.
// Fixtures only: in a real cluster the VictoriaMetrics operator installs its own CRDs.
//
// +groupName=operator.victoriametrics.com
package v1beta1
