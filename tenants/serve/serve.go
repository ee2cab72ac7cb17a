// Package serve decides which TenantControlPlanes the tenant controller gives their own etcd,
// and when a served TCP's spec.dataStore moves to it. It is pure: the controller hands it what
// it read.
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
	// KamajiDefault is the DataStore Kamaji's webhook writes into every TCP created without
	// one (its chart's defaultDatastoreName); empty: no such default, any DataStore not ours is
	// foreign.
	KamajiDefault string
	// HasServed: Kamaji has recorded a ready control plane for the TCP
	// (status.kubernetesResources.version.version is set once its Deployment was ready), so
	// the tenant's keys live on the DataStore it runs on.
	HasServed bool
	// EtcdAvailable: the tenant's own EtcdCluster is Available.
	EtcdAvailable bool
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

// How a served TCP moves to its own DataStore from Kamaji's default one (named in spec.dataStore
// by Kamaji's webhook, or used by Kamaji for a TCP without spec.dataStore): Verdict.Move.
const (
	// MoveUnserved: no control plane of it has been ready yet; spec.dataStore moves at once.
	MoveUnserved = "Unserved"
	// MoveMigrate: it has served and its etcd is Available; spec.dataStore moves and Kamaji
	// migrates the tenant's keys (its own migration job; the control plane is paused meanwhile).
	MoveMigrate = "Migrate"
	// MoveWait: it has served and its etcd is not Available yet; spec.dataStore stays.
	MoveWait = "Wait"
)

// Verdict says whether to serve the TCP, whether to point its spec.dataStore at ours now,
// and why.
type Verdict struct {
	// Serve: make (and keep up to date) the tenant's etcd, PKI and DataStore.
	Serve bool
	// Bind: set spec.dataStore to ours on this pass (only with Serve).
	Bind    bool
	Reason  string
	Message string
	// Move is set for a served TCP not yet on ours: MoveUnserved, MoveMigrate or MoveWait.
	Move string
}

// Decide: a TCP already on our DataStore stays served (its control plane depends on it); one on
// a DataStore that is neither ours nor Kamaji's default is left alone; otherwise its annotation,
// else its namespace's label, else the default decides. A served TCP on Kamaji's default
// DataStore (or none) moves to ours at once while it has never served, else once its etcd is
// Available: moving a served tenant makes Kamaji copy its keys into that etcd.
func Decide(in Input) Verdict {
	onDefault := in.KamajiDefault != "" && in.DataStore == in.KamajiDefault
	switch {
	case in.DataStore != "" && in.DataStore == in.Ours:
		return Verdict{Serve: true, Bind: true, Reason: Bound}
	case in.DataStore != "" && !onDefault:
		return Verdict{Reason: Foreign, Message: foreignMessage(in)}
	}
	v := optIn(in)
	if !v.Serve {
		return v
	}
	switch {
	case !in.HasServed:
		v.Bind, v.Move = true, MoveUnserved
	case in.EtcdAvailable:
		v.Bind, v.Move = true, MoveMigrate
	default:
		v.Move = MoveWait
	}
	return v
}

// optIn is the TCP's annotation, else its namespace's label, else the default.
func optIn(in Input) Verdict {
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

func foreignMessage(in Input) string {
	msg := fmt.Sprintf("spec.dataStore names DataStore %s, which the tenant controller did not create", in.DataStore)
	if in.KamajiDefault != "" {
		msg += fmt.Sprintf(" and which is not Kamaji's default DataStore %s", in.KamajiDefault)
	}
	return msg
}
