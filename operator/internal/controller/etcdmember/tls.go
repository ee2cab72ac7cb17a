package etcdmember

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/pki"
	"github.com/cozystack/etcd-operator/operator/internal/tlsmaterial"
)

// checkTLS gates the creation of the member's Pod on its TLS Secrets: they exist, and their
// certificates cover this member's names, carry the usages etcd needs and chain to the
// Secret's CA. A certificate that does not fit would start a member its peers or clients
// cannot verify, which looks healthy to Kubernetes and is an outage to etcd; here it is a
// condition and an Event that name the problem, and no Pod. A running Pod is left alone
// (rotation is a separate concern).
func (r *Reconciler) checkTLS(ctx context.Context, st *memberState) (bool, error) {
	if st.pod != nil || st.dataLost || st.member.Spec.TLS == nil {
		r.warned.Delete(st.member.UID)
		return false, nil
	}
	err := r.TLS.CheckMember(ctx, st.member, r.ClusterDomain)
	var missing *tlsmaterial.MissingSecretError
	switch {
	case err == nil:
		r.warned.Delete(st.member.UID)
		return false, nil
	case errors.As(err, &missing):
		st.waiting, st.waitingReason, st.recheck = "waiting for TLS: "+missing.Error(), v1alpha2.ReasonWaitingForCertificate, true
		return true, nil
	}
	v, ok := pki.AsValidationError(err)
	if !ok {
		return true, err
	}
	msg := v.Error()
	// One Event per distinct problem, not one per pass: the condition carries it meanwhile.
	if prev, _ := r.warned.Swap(st.member.UID, msg); prev != msg && !st.hasReadyReason(v1alpha2.ReasonCertificateInvalid, msg) {
		r.event(st.member, corev1.EventTypeWarning, v1alpha2.ReasonCertificateInvalid, "ValidateCertificate", "Pod not started: %s", msg)
	}
	st.waiting, st.waitingReason, st.recheck = msg, v1alpha2.ReasonCertificateInvalid, true
	return true, nil
}

func (st *memberState) hasReadyReason(reason, message string) bool {
	for _, c := range st.member.Status.Conditions {
		if c.Type == v1alpha2.ConditionReady {
			return c.Reason == reason && c.Message == message
		}
	}
	return false
}
