package lifecycle

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/authcred"
	"github.com/cozystack/etcd-operator/operator/internal/pki"
	"github.com/cozystack/etcd-operator/operator/internal/pki/pkitest"
	"github.com/cozystack/etcd-operator/operator/internal/topology"
)

// newPasswordlessCluster creates a cluster whose root has no password: the operator's client
// certificate (BYO, CN root) is the only way to act as root.
func newPasswordlessCluster(t *testing.T, ns, name string, replicas int32) {
	t.Helper()
	ca := pkitest.NewCA(t, "passwordless-ca")
	all := pki.ServerNames(pki.ClusterRef{Name: name, Namespace: ns})
	create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name + "-server", Namespace: ns},
		Data: ca.SecretData(t, all.DNS, all.IPs, pkitest.ServerAndClient...)})
	create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name + "-client", Namespace: ns},
		Data: ca.ClientSecretData(t, v1alpha2.RootUser)})
	create(t, &v1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha2.EtcdClusterSpec{Replicas: ptr.To(replicas), Version: "3.6.16",
			TLS: &v1alpha2.TLSSpec{Client: &v1alpha2.ClientTLS{
				ServerSecretRef:         &corev1.LocalObjectReference{Name: name + "-server"},
				OperatorClientSecretRef: &corev1.LocalObjectReference{Name: name + "-client"}}},
			Auth: &v1alpha2.AuthSpec{Enabled: true, PasswordlessRoot: true}}})
}

// passwordlessLatched: auth is on and latched, root exists without a password and with the
// root role, and the operator's own user has the owned Secret's password.
func passwordlessLatched(t *testing.T, ns, name string) func() bool {
	return func() bool {
		f := fakeEtcd.Cluster(topology.Key(ns, name))
		var owned corev1.Secret
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: v1alpha2.OperatorAuthSecretName(name)}, &owned); err != nil {
			return false
		}
		opPW, ok := f.UserPassword(v1alpha2.OperatorUser)
		return getCluster(t, ns, name).Status.AuthEnabled && f.AuthEnabled() && f.UserHasNoPassword(v1alpha2.RootUser) &&
			slices.Contains(f.UserRoles(v1alpha2.RootUser), v1alpha2.RootRole) &&
			ok && opPW == string(owned.Data[authcred.KeyPassword])
	}
}

// spec.auth.passwordlessRoot: auth is enabled with a root that has no password (as the legacy
// operator and kamaji-etcd make it), the members join with the operator's own user, and the
// Event says how root is reached.
func TestAuthPasswordlessRoot(t *testing.T) {
	ns := newNamespace(t)
	newPasswordlessCluster(t, ns, "p", 3)
	waitFor(t, ns, "auth latched with a passwordless root", passwordlessLatched(t, ns, "p"))
	waitFor(t, ns, "3 members with auth on", converged(t, ns, "p", 3))
	waitFor(t, ns, "an AuthEnabled Event naming the certificate", func() bool {
		es := events(t, ns, "p", v1alpha2.ReasonAuthEnabled)
		return len(es) == 1 && es[0].Note == "etcd authentication enabled; root has no password: it is reached only by a client certificate whose CN is root"
	})
}

// The operator's own user refused (as on a cluster etcd-migrate adopted with auth on, where
// it does not exist yet): the operator falls back to root by its client certificate, recreates
// its user, and the cluster ends healthy.
func TestAuthPasswordlessRootRepairsOperatorUser(t *testing.T) {
	ns := newNamespace(t)
	newPasswordlessCluster(t, ns, "q", 1)
	waitFor(t, ns, "auth latched with a passwordless root", passwordlessLatched(t, ns, "q"))
	waitFor(t, ns, "converged", converged(t, ns, "q", 1))

	f := fakeEtcd.Cluster(topology.Key(ns, "q"))
	f.SetPasswordBehindOperator(v1alpha2.OperatorUser, "Other#Op1")
	touch(t, ns, "q", "1")
	waitFor(t, ns, "operator user repaired through root's certificate", func() bool {
		pw, _ := f.UserPassword(v1alpha2.OperatorUser)
		return pw != "Other#Op1" && passwordlessLatched(t, ns, "q")() && degradedReason(t, ns, "q") == "" && converged(t, ns, "q", 1)()
	})
	if n := len(events(t, ns, "q", v1alpha2.ReasonAuthCredentialsRejected)); n != 0 {
		t.Errorf("%d AuthCredentialsRejected Events: root by certificate should have been enough", n)
	}
}
