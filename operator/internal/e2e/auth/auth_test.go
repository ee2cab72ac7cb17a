//go:build e2e

package auth

import (
	"context"
	"crypto/tls"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
	"github.com/cozystack/etcd-operator/operator/internal/etcd"
)

func TestMain(m *testing.M) {
	framework.Main(m, framework.Options{Scheme: e2eutil.Scheme})
}

const (
	convergeTimeout = 5 * time.Minute
	authTimeout     = 2 * time.Minute
)

// TestAuth shares one operator process (the real binary) between its scenarios.
func TestAuth(t *testing.T) {
	c := framework.Shared(t)
	op := e2eutil.StartSuiteOperator(t, c, 300)
	// Namespaces belong to the parent: a later scenario continues an earlier one's cluster.
	created, running := e2eutil.NewNamespace(t, c), e2eutil.NewNamespace(t, c)
	ok := t.Run("EnabledAtCreate", func(t *testing.T) { testEnabledAtCreate(t, c, created) })
	t.Run("PasswordRotation", func(t *testing.T) { needs(t, ok); testRotation(t, c, created) })
	ok = t.Run("EnabledOnRunningCluster", func(t *testing.T) { testEnabledOnRunning(t, c, running) })
	t.Run("CredentialsRejected", func(t *testing.T) { needs(t, ok); testRejected(t, c, op, running) })
	t.Run("ClientCertificateRoot", func(t *testing.T) { testClientCertRoot(t, c, e2eutil.NewNamespace(t, c)) })
	t.Run("AddedWithClientTLSToPlaintextCluster", func(t *testing.T) { testAuthWithClientTLSOnPlaintext(t, c, e2eutil.NewNamespace(t, c)) })
}

func needs(t *testing.T, ok bool) {
	if !ok {
		t.Skip("the scenario this one continues failed")
	}
}

// newTLSCluster: a cluster with a BYO server certificate (auth requires client TLS) and the
// root credentials Secret; withAuth turns auth on at creation.
func newTLSCluster(t *testing.T, c *framework.Cluster, ns, name, password string, withAuth bool) *tls.Config {
	t.Helper()
	e2eutil.CreateServerSecret(t, c, ns, name+"-server", name)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name + "-root", Namespace: ns}, Type: corev1.SecretTypeBasicAuth,
		StringData: map[string]string{corev1.BasicAuthUsernameKey: "root", corev1.BasicAuthPasswordKey: password}}
	if err := c.Client.Create(context.Background(), secret); err != nil {
		t.Fatal(err)
	}
	e2eutil.CreateCluster(t, c, ns, name, 3, func(s *v1alpha2.EtcdClusterSpec) {
		s.TLS = &v1alpha2.TLSSpec{Client: &v1alpha2.ClientTLS{ServerSecretRef: &corev1.LocalObjectReference{Name: name + "-server"}}}
		if withAuth {
			s.Auth = authSpec(name)
		}
	})
	return e2eutil.TLSConfig(t, c, ns, name+"-server", "")
}

func authSpec(name string) *v1alpha2.AuthSpec {
	return &v1alpha2.AuthSpec{Enabled: true, RootCredentialsSecretRef: &corev1.LocalObjectReference{Name: name + "-root"}}
}

func waitLatched(t *testing.T, c *framework.Cluster, ns, name string) time.Duration {
	t.Helper()
	return e2eutil.WaitFor(t, authTimeout, "status.authEnabled", func() bool {
		return e2eutil.GetCluster(t, c, ns, name).Status.AuthEnabled
	})
}

// assertAuthOn: root with password writes and reads; a client without credentials is refused.
func assertAuthOn(t *testing.T, c *framework.Cluster, ns, name string, cfg *tls.Config, password string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	root, err := e2eutil.TLSEtcdClientAs(t, c, ns, name, cfg, "root", password)
	if err != nil {
		t.Fatalf("root with the Secret's password: %v", err)
	}
	if _, err := root.Put(ctx, "auth", name); err != nil {
		t.Fatalf("put as root: %v", err)
	}
	if resp, err := root.Get(ctx, "auth"); err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != name {
		t.Fatalf("get as root: %v %v", err, resp)
	}
	anon := e2eutil.TLSEtcdClient(t, c, ns, name, cfg)
	if _, err := anon.Put(ctx, "anonymous", "x"); !etcd.IsAuthRequired(err) {
		t.Errorf("anonymous put with auth on: %v, want refused for lack of credentials", err)
	}
	if _, err := anon.Get(ctx, "auth"); !etcd.IsAuthRequired(err) {
		t.Errorf("anonymous get with auth on: %v, want refused for lack of credentials", err)
	}
}

// testEnabledAtCreate: 3 members with auth from the start come up Available with every member
// Ready (the readiness probe needs no credentials); root works, anonymous does not.
func testEnabledAtCreate(t *testing.T, c *framework.Cluster, ns string) {
	start := time.Now()
	cfg := newTLSCluster(t, c, ns, "create", "first-password", true)
	waitLatched(t, c, ns, "create")
	t.Logf("auth latched %s after creation", time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		if t.Failed() {
			ec := e2eutil.GetCluster(t, c, ns, "create")
			t.Logf("status: %+v", ec.Status)
			for _, m := range e2eutil.Members(t, c, ns, "create") {
				t.Logf("member %s: %+v", m.Name, m.Status)
			}
		}
	})
	root, err := e2eutil.TLSEtcdClientAs(t, c, ns, "create", cfg, "root", "first-password")
	if err != nil {
		t.Fatalf("root with the Secret's password: %v", err)
	}
	e2eutil.WaitConvergedWith(t, c, ns, "create", 3, root, convergeTimeout)
	t.Logf("3-member cluster with auth converged %s after creation", time.Since(start).Round(time.Millisecond))
	assertAvailable(t, c, ns, "create", 3)
	assertAuthOn(t, c, ns, "create", cfg, "first-password")
	if e2eutil.FindEvent(t, c, ns, "create", v1alpha2.ReasonAuthEnabled) == nil {
		t.Error("no AuthEnabled Event")
	}
}

func assertAvailable(t *testing.T, c *framework.Cluster, ns, name string, ready int32) {
	t.Helper()
	e2eutil.WaitFor(t, time.Minute, "Available=QuorumHealthy with all members Ready", func() bool {
		ec := e2eutil.GetCluster(t, c, ns, name)
		a := meta.FindStatusCondition(ec.Status.Conditions, v1alpha2.ConditionAvailable)
		return a != nil && a.Reason == v1alpha2.ReasonQuorumHealthy && ec.Status.ReadyMembers == ready
	})
}

// testRotation: a new password in the Secret is applied to root; the old one stops working.
func testRotation(t *testing.T, c *framework.Cluster, ns string) {
	cfg := e2eutil.TLSConfig(t, c, ns, "create-server", "")
	setPassword(t, c, ns, "create-root", "second-password")
	start := time.Now()
	e2eutil.WaitFor(t, authTimeout, "root's new password accepted", func() bool {
		cli, err := e2eutil.TLSEtcdClientAs(t, c, ns, "create", cfg, "root", "second-password")
		if err == nil {
			_ = cli.Close()
		}
		return err == nil
	})
	t.Logf("password rotation applied %s after the Secret changed", time.Since(start).Round(time.Millisecond))
	if _, err := e2eutil.TLSEtcdClientAs(t, c, ns, "create", cfg, "root", "first-password"); !etcd.IsAuthFailed(err) {
		t.Errorf("root's old password after rotation: %v, want refused", err)
	}
	ev := e2eutil.FindEvent(t, c, ns, "create", v1alpha2.ReasonAuthPasswordChanged)
	if ev == nil {
		t.Error("no AuthPasswordChanged Event")
	} else if strings.Contains(ev.Note, "second-password") {
		t.Errorf("Event carries the password: %q", ev.Note)
	}
	assertAuthOn(t, c, ns, "create", cfg, "second-password")
}

func setPassword(t *testing.T, c *framework.Cluster, ns, secret, password string) {
	t.Helper()
	// A patch: the operator labels the Secret, so an update could conflict.
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secret, Namespace: ns}}
	patch := client.RawPatch(types.MergePatchType, []byte(`{"stringData":{"password":"`+password+`"}}`))
	if err := c.Client.Patch(context.Background(), s, patch); err != nil {
		t.Fatal(err)
	}
}

// testEnabledOnRunning: auth turned on for a running TLS cluster, which stays Available.
func testEnabledOnRunning(t *testing.T, c *framework.Cluster, ns string) {
	cfg := newTLSCluster(t, c, ns, "running", "pw-running", false)
	e2eutil.WaitConvergedTLS(t, c, ns, "running", 3, cfg, convergeTimeout)
	anon := e2eutil.TLSEtcdClient(t, c, ns, "running", cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := anon.Put(ctx, "before-auth", "x"); err != nil {
		t.Fatalf("anonymous put before auth: %v", err)
	}
	ec := e2eutil.GetCluster(t, c, ns, "running")
	patch := client.MergeFrom(ec.DeepCopy())
	ec.Spec.Auth = authSpec("running")
	if err := c.Client.Patch(context.Background(), ec, patch); err != nil {
		t.Fatal(err)
	}
	took := waitLatched(t, c, ns, "running")
	t.Logf("auth latched %s after spec.auth was set on a running cluster", took.Round(time.Millisecond))
	assertAuthOn(t, c, ns, "running", cfg, "pw-running")
	assertAvailable(t, c, ns, "running", 3)
}

// testRejected: etcd's root and operator passwords changed behind the operator (as with data
// restored from another cluster), then the operator restarted, so it must log in afresh:
// Degraded=AuthCredentialsRejected and an Event. Putting etcd's actual root password into
// the Secret recovers it.
func testRejected(t *testing.T, c *framework.Cluster, op *e2eutil.Operator, ns string) {
	cfg := e2eutil.TLSConfig(t, c, ns, "running-server", "")
	root, err := e2eutil.TLSEtcdClientAs(t, c, ns, "running", cfg, "root", "pw-running")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, u := range []string{v1alpha2.OperatorUser, "root"} {
		if _, err := root.UserChangePassword(ctx, u, "changed-behind-the-operator"); err != nil {
			t.Fatalf("change %s's password: %v", u, err)
		}
	}
	if err := op.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := op.Start(); err != nil {
		t.Fatal(err)
	}
	var degraded *metav1.Condition
	took := e2eutil.WaitFor(t, authTimeout, "Degraded=AuthCredentialsRejected", func() bool {
		degraded = meta.FindStatusCondition(e2eutil.GetCluster(t, c, ns, "running").Status.Conditions, v1alpha2.ConditionDegraded)
		return degraded != nil && degraded.Status == metav1.ConditionTrue && degraded.Reason == v1alpha2.ReasonAuthCredentialsRejected
	})
	t.Logf("Degraded=%s %s after the operator restarted: %s", degraded.Reason, took.Round(time.Millisecond), degraded.Message)
	if strings.Contains(degraded.Message, "changed-behind-the-operator") || strings.Contains(degraded.Message, "pw-running") {
		t.Errorf("condition carries a password: %q", degraded.Message)
	}
	if ev := e2eutil.FindEvent(t, c, ns, "running", v1alpha2.ReasonAuthCredentialsRejected); ev == nil || ev.Type != corev1.EventTypeWarning {
		t.Errorf("no AuthCredentialsRejected Warning Event: %v", ev)
	}
	// The cluster still serves its clients meanwhile. This client is also the one that watches
	// the scale-down below: it logs in now, while every member is up, because a login through
	// the Service during the scale-down may reach a member that is being removed.
	root, err = e2eutil.TLSEtcdClientAs(t, c, ns, "running", cfg, "root", "changed-behind-the-operator")
	if err != nil {
		t.Fatalf("root with etcd's actual password: %v", err)
	}

	setPassword(t, c, ns, "running-root", "changed-behind-the-operator")
	took = e2eutil.WaitFor(t, authTimeout, "Degraded cleared once the Secret holds etcd's password", func() bool {
		d := meta.FindStatusCondition(e2eutil.GetCluster(t, c, ns, "running").Status.Conditions, v1alpha2.ConditionDegraded)
		return d != nil && d.Status == metav1.ConditionFalse
	})
	t.Logf("recovered %s after the Secret was fixed", took.Round(time.Millisecond))
	assertAvailable(t, c, ns, "running", 3)
	// The operator acts again with its own (recreated) user: a scale-down goes through.
	e2eutil.Scale(t, c, ns, "running", 1)
	took = e2eutil.WaitConvergedWith(t, c, ns, "running", 1, root, convergeTimeout)
	t.Logf("scaled 3->1 with the recreated operator user in %s", took.Round(time.Millisecond))
}

// testClientCertRoot: under mTLS with auth, a client certificate with CN=root and no password
// is root (how Kamaji talks to its etcd); the operator's own certificate, whose CN is no etcd
// user, gets nothing without the operator's password.
func testClientCertRoot(t *testing.T, c *framework.Cluster, ns string) {
	ca := e2eutil.CreateServerSecret(t, c, ns, "mtls-server", "mtls")
	e2eutil.CreateTLSSecret(t, c, ns, "mtls-operator", ca.ClientSecretData(t, "mtls-operator-client"))
	e2eutil.CreateTLSSecret(t, c, ns, "kamaji-root", ca.ClientSecretData(t, "root"))
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "mtls-root", Namespace: ns}, Type: corev1.SecretTypeBasicAuth,
		StringData: map[string]string{corev1.BasicAuthUsernameKey: "root", corev1.BasicAuthPasswordKey: "mtls-pw"}}
	if err := c.Client.Create(context.Background(), secret); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	e2eutil.CreateCluster(t, c, ns, "mtls", 1, func(s *v1alpha2.EtcdClusterSpec) {
		s.TLS = &v1alpha2.TLSSpec{Client: &v1alpha2.ClientTLS{
			ServerSecretRef:         &corev1.LocalObjectReference{Name: "mtls-server"},
			OperatorClientSecretRef: &corev1.LocalObjectReference{Name: "mtls-operator"},
		}}
		s.Auth = authSpec("mtls")
	})
	waitLatched(t, c, ns, "mtls")
	t.Logf("mTLS cluster: auth latched %s after creation", time.Since(start).Round(time.Millisecond))

	rootCert := e2eutil.TLSEtcdClient(t, c, ns, "mtls", e2eutil.TLSConfig(t, c, ns, "mtls-server", "kamaji-root"))
	e2eutil.WaitConvergedWith(t, c, ns, "mtls", 1, rootCert, convergeTimeout)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := rootCert.Put(ctx, "kamaji", "cn-root"); err != nil {
		t.Fatalf("put with a CN=root certificate and no password: %v", err)
	}
	if resp, err := rootCert.Get(ctx, "kamaji"); err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("get with a CN=root certificate: %v %v", err, resp)
	}
	other := e2eutil.TLSEtcdClient(t, c, ns, "mtls", e2eutil.TLSConfig(t, c, ns, "mtls-server", "mtls-operator"))
	if _, err := other.Put(ctx, "kamaji", "x"); err == nil {
		t.Error("a certificate whose CN is no etcd user wrote with auth on")
	} else {
		t.Logf("certificate CN=mtls-operator-client without a password: %v", err)
	}
}
