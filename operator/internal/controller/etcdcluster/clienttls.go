package etcdcluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/topology"
)

// Adding spec.tls.client to a running plaintext cluster takes two rolling updates. First every
// member is restarted into TLS with a plaintext listener beside it on the same port ("both"),
// while the operator and clients keep reaching members in plaintext. Once every member runs
// that template, status.clientTLSServing is latched: the operator dials TLS from then on, and
// the template drops the plaintext listener, which the second rolling update carries out.

// latchClientTLS decides, before the template is synced, whether members still keep their
// plaintext listener, and latches status.clientTLSServing once every member serves TLS.
func (r *Reconciler) latchClientTLS(ctx context.Context, st *clusterState) error {
	c := st.cluster
	switch {
	case c.Spec.TLS == nil || c.Spec.TLS.Client == nil:
		st.status.ClientTLSServing = false
		return nil
	case st.status.ClientTLSServing:
		return nil
	case topology.AllServeTLSOnly(st.members):
		// Created with client TLS (or latched by a pass whose status write was lost).
		st.status.ClientTLSServing = true
		return nil
	}
	if anyPlaintext(st.members) {
		r.event(c, corev1.EventTypeNormal, v1alpha2.ReasonEnablingClientTLS, "EnableClientTLS",
			"spec.tls.client added to a running cluster: members are restarted one at a time to serve TLS beside "+
				"plaintext on the client port; the operator and clients switch to TLS once all of them do")
		return nil
	}
	if !allServeBoth(st.members) {
		return nil // the rolling update is on its way
	}
	// Every member serves TLS: dialing TLS also needs the operator's own client certificate.
	if _, err := r.TLS.ClientConfig(ctx, c); err != nil {
		st.clientTLSWait = fmt.Sprintf("every member serves TLS beside plaintext; the operator switches to TLS once it can: %v", err)
		return nil
	}
	st.status.ClientTLSServing = true
	r.event(c, corev1.EventTypeNormal, v1alpha2.ReasonClientTLSServing, "EnableClientTLS",
		"every member serves TLS on the client port: the operator dials TLS from now on, and members are restarted "+
			"one at a time without the plaintext listener")
	return nil
}

// anyPlaintext: some member's spec has no client TLS yet (the template is about to be synced).
func anyPlaintext(members []v1alpha2.EtcdMember) bool {
	for i := range members {
		m := &members[i]
		if m.DeletionTimestamp.IsZero() && (m.Spec.TLS == nil || m.Spec.TLS.ClientServerSecretRef == nil) {
			return true
		}
	}
	return false
}

// allServeBoth: every running member surely serves TLS: its Pod runs its spec's revision (which
// has client TLS, anyPlaintext being false), the member controller has reported on that spec,
// and it is ready. Parked members start with their spec, which already has TLS.
func allServeBoth(members []v1alpha2.EtcdMember) bool {
	for i := range members {
		m := &members[i]
		if !m.DeletionTimestamp.IsZero() || m.Spec.Dormant {
			continue
		}
		s := m.Status
		if s.CurrentRevision == "" || s.CurrentRevision != s.UpdateRevision || !topology.StatusCurrent(m) || !topology.MemberReady(m) {
			return false
		}
	}
	return true
}
