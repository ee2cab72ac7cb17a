package lifecycle

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/authcred"
	"github.com/cozystack/etcd-operator/operator/internal/pki"
	"github.com/cozystack/etcd-operator/operator/internal/pki/pkitest"
	"github.com/cozystack/etcd-operator/operator/internal/topology"
)

// rootPW has characters generated object names never carry, so the "Event carries a
// password" check cannot match a random name suffix (a bare "pw" once matched "w-pzpww").
const rootPW = "Root#Pw1"

// newAuthCluster creates a cluster with a BYO server certificate that covers its members
// (auth requires client TLS) and, when withAuth, auth with root's password in Secret "root".
func newAuthCluster(t *testing.T, ns, name string, replicas int32, withAuth bool) *v1alpha2.EtcdCluster {
	t.Helper()
	ca := pkitest.NewCA(t, "auth-ca")
	all := pki.ServerNames(pki.ClusterRef{Name: name, Namespace: ns})
	create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name + "-server", Namespace: ns},
		Data: ca.SecretData(t, all.DNS, all.IPs, pkitest.ServerAndClient...)})
	c := &v1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha2.EtcdClusterSpec{Replicas: ptr.To(replicas), Version: "3.6.16",
			TLS: &v1alpha2.TLSSpec{Client: &v1alpha2.ClientTLS{ServerSecretRef: &corev1.LocalObjectReference{Name: name + "-server"}}}}}
	if withAuth {
		c.Spec.Auth = authSpec("root")
	}
	create(t, c)
	return c
}

func degradedReason(t *testing.T, ns, name string) string {
	d := meta.FindStatusCondition(getCluster(t, ns, name).Status.Conditions, v1alpha2.ConditionDegraded)
	if d == nil || d.Status != metav1.ConditionTrue {
		return ""
	}
	return d.Reason
}

// setPassword changes the Secret's password with a patch (the operator labels the Secret).
func setPassword(t *testing.T, ns, name, password string) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	patch := client.RawPatch(types.MergePatchType, []byte(`{"stringData":{"password":"`+password+`"}}`))
	if err := k8s.Patch(context.Background(), s, patch); err != nil {
		t.Fatal(err)
	}
}

// touch makes the cluster controller look again (an annotation change), as any later event would.
func touch(t *testing.T, ns, name, value string) {
	t.Helper()
	c := getCluster(t, ns, name)
	patch := client.MergeFrom(c.DeepCopy())
	metav1.SetMetaDataAnnotation(&c.ObjectMeta, "test/touch", value)
	if err := k8s.Patch(context.Background(), c, patch); err != nil {
		t.Fatal(err)
	}
}

// A 3-member cluster with auth from the start: auth is enabled once the seed has formed the
// cluster, the remaining members join with credentials, root has the Secret's password and
// the root role, the operator has its own user, and the root Secret is labelled so it is watched.
func TestAuthEnabledAtCreate(t *testing.T) {
	ns := newNamespace(t)
	create(t, rootSecret(ns, "root", "first-pw"))
	newAuthCluster(t, ns, "a", 3, true)
	waitFor(t, ns, "auth latched with root's password", authLatched(t, ns, "a", "first-pw"))
	waitFor(t, ns, "3 members with auth on", converged(t, ns, "a", 3))

	f := fakeEtcd.Cluster(topology.Key(ns, "a"))
	if !slices.Contains(f.UserRoles(v1alpha2.RootUser), v1alpha2.RootRole) || !slices.Contains(f.UserRoles(v1alpha2.OperatorUser), v1alpha2.RootRole) {
		t.Errorf("roles: root %v, operator %v; both need root", f.UserRoles(v1alpha2.RootUser), f.UserRoles(v1alpha2.OperatorUser))
	}
	// Auth comes as soon as the seed has formed the cluster, so the other members were added
	// and promoted with the operator's credentials (the fake refuses anonymous changes).
	ops := f.Ops()
	enabled := slices.Index(ops, "auth-enable")
	firstAdd := slices.IndexFunc(ops, func(op string) bool { return strings.HasPrefix(op, "add ") })
	if enabled < 0 || firstAdd < enabled {
		t.Errorf("etcd ops %v: want auth-enable before the first member add", ops)
	}
	var owned corev1.Secret
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: v1alpha2.OperatorAuthSecretName("a")}, &owned); err != nil {
		t.Fatalf("owned operator-auth Secret: %v", err)
	}
	opPW, _ := f.UserPassword(v1alpha2.OperatorUser)
	if string(owned.Data[authcred.KeyPassword]) != opPW || strings.Contains(string(owned.Data[authcred.KeyRootHash]), "first-pw") ||
		len(owned.Data[authcred.KeyRootHash]) == 0 {
		t.Errorf("owned Secret does not hold the operator's password and root's hash: keys %v", slices.Collect(maps.Keys(owned.Data)))
	}
	if ref := metav1.GetControllerOf(&owned); ref == nil || ref.Name != "a" {
		t.Errorf("owned Secret not controlled by the cluster: %v", owned.OwnerReferences)
	}
	var root corev1.Secret
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "root"}, &root); err != nil || root.Labels[v1alpha2.LabelCluster] != "a" {
		t.Errorf("root Secret not labelled for its cluster (so not watched): %v %v", root.Labels, err)
	}
	waitFor(t, ns, "an AuthEnabled Event", func() bool { return len(events(t, ns, "a", v1alpha2.ReasonAuthEnabled, "first-pw", opPW)) == 1 })
}

// A password change in the Secret is applied to root in etcd, by the operator's own user.
func TestAuthPasswordRotation(t *testing.T) {
	ns := newNamespace(t)
	create(t, rootSecret(ns, "root", "Old#Pw1"))
	newAuthCluster(t, ns, "r", 1, true)
	waitFor(t, ns, "auth latched", authLatched(t, ns, "r", "Old#Pw1"))
	waitFor(t, ns, "converged", converged(t, ns, "r", 1))

	setPassword(t, ns, "root", "New#Pw1")
	waitFor(t, ns, "root's password rotated", authLatched(t, ns, "r", "New#Pw1"))
	waitFor(t, ns, "one AuthPasswordChanged Event", func() bool {
		return len(events(t, ns, "r", v1alpha2.ReasonAuthPasswordChanged, "Old#Pw1", "New#Pw1")) == 1
	})
	// A rotation is no lockout: the cluster stays (or comes back) healthy with the new password.
	waitFor(t, ns, "healthy after the rotation", func() bool { return degradedReason(t, ns, "r") == "" && converged(t, ns, "r", 1)() })
}

// Auth turned on for a running cluster.
func TestAuthEnabledOnRunningCluster(t *testing.T) {
	ns := newNamespace(t)
	create(t, rootSecret(ns, "root", rootPW))
	newAuthCluster(t, ns, "e", 3, false)
	waitFor(t, ns, "3 members without auth", converged(t, ns, "e", 3))
	if fakeEtcd.Cluster(topology.Key(ns, "e")).AuthEnabled() {
		t.Fatal("auth on without spec.auth")
	}
	// A patch, not an update: the controller's status writes move the resourceVersion.
	c := getCluster(t, ns, "e")
	patch := client.MergeFrom(c.DeepCopy())
	c.Spec.Auth = authSpec("root")
	if err := k8s.Patch(context.Background(), c, patch); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ns, "auth latched", authLatched(t, ns, "e", rootPW))
	waitFor(t, ns, "still 3 healthy members", converged(t, ns, "e", 3))
}

// The Secret missing: Degraded=AuthCredentialsMissing and one Event, auth stays off, and it
// is enabled once the Secret appears.
func TestAuthCredentialsMissing(t *testing.T) {
	ns := newNamespace(t)
	newAuthCluster(t, ns, "m", 1, true)
	waitFor(t, ns, "Degraded=AuthCredentialsMissing", func() bool {
		return degradedReason(t, ns, "m") == v1alpha2.ReasonAuthCredentialsMissing
	})
	waitFor(t, ns, "an AuthCredentialsMissing Event", func() bool {
		return len(events(t, ns, "m", v1alpha2.ReasonAuthCredentialsMissing)) > 0
	})
	if fakeEtcd.Cluster(topology.Key(ns, "m")).AuthEnabled() {
		t.Fatal("auth enabled without a password")
	}
	// The Secret as a user would write it: unlabelled, so only the retry finds it.
	create(t, rootSecret(ns, "root", "Late#Pw1"))
	waitFor(t, ns, "auth latched once the Secret exists", authLatched(t, ns, "m", "Late#Pw1"))
	waitFor(t, ns, "Degraded cleared", func() bool { return degradedReason(t, ns, "m") == "" })
	if n := len(events(t, ns, "m", v1alpha2.ReasonAuthCredentialsMissing)); n != 1 {
		t.Errorf("%d AuthCredentialsMissing Events, want 1 (not one per pass)", n)
	}
}

// etcd refusing both the operator's user and root (as with data restored from another
// cluster): Degraded=AuthCredentialsRejected and an Event, nothing changed in etcd; the
// right password in the Secret recovers, and the operator's user is recreated.
func TestAuthCredentialsRejected(t *testing.T) {
	ns := newNamespace(t)
	create(t, rootSecret(ns, "root", rootPW))
	newAuthCluster(t, ns, "w", 1, true)
	waitFor(t, ns, "auth latched", authLatched(t, ns, "w", rootPW))
	waitFor(t, ns, "converged", converged(t, ns, "w", 1))

	f := fakeEtcd.Cluster(topology.Key(ns, "w"))
	f.SetPasswordBehindOperator(v1alpha2.RootUser, "Other#Root1")
	f.SetPasswordBehindOperator(v1alpha2.OperatorUser, "Other#Op1")
	before := len(f.Ops())
	touch(t, ns, "w", "1")
	waitFor(t, ns, "Degraded=AuthCredentialsRejected", func() bool {
		return degradedReason(t, ns, "w") == v1alpha2.ReasonAuthCredentialsRejected
	})
	waitFor(t, ns, "an AuthCredentialsRejected Event", func() bool {
		return len(events(t, ns, "w", v1alpha2.ReasonAuthCredentialsRejected, rootPW, "Other#Root1")) > 0
	})
	if ops := f.Ops(); len(ops) != before {
		t.Errorf("etcd changed while the credentials were refused: %v", ops[before:])
	}

	setPassword(t, ns, "root", "Other#Root1")
	waitFor(t, ns, "recovered: Degraded cleared, operator user usable again", func() bool {
		opPW, _ := f.UserPassword(v1alpha2.OperatorUser)
		return degradedReason(t, ns, "w") == "" && opPW != "Other#Op1" && converged(t, ns, "w", 1)()
	})
	if n := len(events(t, ns, "w", v1alpha2.ReasonAuthCredentialsRejected)); n != 1 {
		t.Errorf("%d AuthCredentialsRejected Events, want 1", n)
	}
}

// Auth turned on in etcd while spec.auth is absent (as with a snapshot restored from a cluster
// with auth): Available=False and Degraded=AuthRequiredNotConfigured with one Event; setting
// spec.auth with root's password recovers.
func TestAuthRequiredNotConfigured(t *testing.T) {
	ns := newNamespace(t)
	create(t, rootSecret(ns, "root", rootPW))
	newAuthCluster(t, ns, "n", 1, false)
	waitFor(t, ns, "converged without auth", converged(t, ns, "n", 1))
	fakeEtcd.Cluster(topology.Key(ns, "n")).EnableAuthBehindOperator(rootPW)
	touch(t, ns, "n", "1")
	waitFor(t, ns, "Available=False and Degraded=AuthRequiredNotConfigured", func() bool {
		a := meta.FindStatusCondition(getCluster(t, ns, "n").Status.Conditions, v1alpha2.ConditionAvailable)
		return degradedReason(t, ns, "n") == v1alpha2.ReasonAuthRequiredNotConfigured &&
			a != nil && a.Status == metav1.ConditionFalse && a.Reason == v1alpha2.ReasonAuthRequiredNotConfigured
	})
	waitFor(t, ns, "an AuthRequiredNotConfigured Event", func() bool {
		return len(events(t, ns, "n", v1alpha2.ReasonAuthRequiredNotConfigured)) > 0
	})

	c := getCluster(t, ns, "n")
	patch := client.MergeFrom(c.DeepCopy())
	c.Spec.Auth = authSpec("root")
	if err := k8s.Patch(context.Background(), c, patch); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ns, "auth latched", authLatched(t, ns, "n", rootPW))
	waitFor(t, ns, "recovered", func() bool { return degradedReason(t, ns, "n") == "" && converged(t, ns, "n", 1)() })
	if n := len(events(t, ns, "n", v1alpha2.ReasonAuthRequiredNotConfigured)); n != 1 {
		t.Errorf("%d AuthRequiredNotConfigured Events, want 1", n)
	}
}
