// Package v1beta1 holds owned Go types for VictoriaMetrics' VMServiceScrape and VMRule
// (operator.victoriametrics.com/v1beta1), from which `make manifests` (hack/fixture-crds.sh)
// generates CRDs into internal/testenv/crds/victoriametrics, so that the charts' VMServiceScrapes
// and VMRules are validated by envtest's apiserver like every other rendered object.
//
// The VictoriaMetrics operator's Go module is not served by the module proxy, so neither its
// types nor its CRD YAML can be used. These types follow the field names, types, enums and
// required fields of its published CRD for the fields a scrape of a metrics Service uses
// (selector, namespaceSelector, discoveryRole, jobLabel, target labels, and the endpoint's port,
// path, scheme, interval, timeout and honor flags); the endpoint's auth, TLS and relabelling
// fields are left out, so an object that uses them is refused here, never passed by mistake.
// VMRule keeps the group fields (name, interval, concurrency, labels) and the rule fields
// (alert, record, expr, for, keep_firing_for, labels, annotations) of its published CRD.
// Fixtures only: in a real cluster the VictoriaMetrics operator installs its own CRDs.
//
// +groupName=operator.victoriametrics.com
package v1beta1
