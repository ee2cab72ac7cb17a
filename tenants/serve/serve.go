// Package serve decides which TenantControlPlanes the tenant controller gives their own etcd.
// It is pure: the controller hands it what it read.
package serve

import (
	"fmt"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

// Input is what the decision reads.
type Input struct {
	// TCPAnnotations and NamespaceLabels carry v1alpha2.AnnotationTenantEtcd ("true"/"false").
	TCPAnnotations  map[string]string
	NamespaceLabels map[string]string
	// Default serves TCPs that neither their annotation nor their namespace's label decide.
	Default bool
	// DataStore is the TCP's spec.dataStore; Ours the DataStore this controller makes for it.
	DataStore, Ours string
}

// Why a TCP is or is not served.
const (
	Bound        = "Bound"        // it names our DataStore: served whatever the opt-in says now
	Foreign      = "Foreign"      // it names a DataStore we did not make: never touched
	OptedIn      = "OptedIn"      // its annotation or its namespace's label says "true"
	OptedOut     = "OptedOut"     // ... says "false"
	ByDefault    = "ByDefault"    // the cluster-wide default serves it
	NotOptedIn   = "NotOptedIn"   // nothing opts it in
	InvalidOptIn = "InvalidOptIn" // an annotation or label that is neither "true" nor "false"
)

// Verdict says whether to serve the TCP, and why.
type Verdict struct {
	Serve   bool
	Reason  string
	Message string
}

// Decide: a TCP already on our DataStore stays served (its control plane depends on it); one on
// another DataStore is left alone; otherwise its annotation, else its namespace's label, else
// the default decides.
func Decide(in Input) Verdict {
	switch {
	case in.DataStore != "" && in.DataStore == in.Ours:
		return Verdict{Serve: true, Reason: Bound}
	case in.DataStore != "":
		return Verdict{Reason: Foreign, Message: fmt.Sprintf("spec.dataStore names DataStore %s, which the tenant controller did not create", in.DataStore)}
	}
	for _, src := range []struct {
		where string
		m     map[string]string
	}{{"the TenantControlPlane's annotation", in.TCPAnnotations}, {"the namespace's label", in.NamespaceLabels}} {
		v, ok := src.m[v1alpha2.AnnotationTenantEtcd]
		switch {
		case !ok:
			continue
		case v == "true":
			return Verdict{Serve: true, Reason: OptedIn}
		case v == "false":
			return Verdict{Reason: OptedOut}
		default:
			return Verdict{Reason: InvalidOptIn, Message: fmt.Sprintf("%s %s is %q; it must be \"true\" or \"false\"", src.where, v1alpha2.AnnotationTenantEtcd, v)}
		}
	}
	if in.Default {
		return Verdict{Serve: true, Reason: ByDefault}
	}
	return Verdict{Reason: NotOptedIn}
}
