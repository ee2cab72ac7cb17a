package etcdaccess

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/authcred"
	"github.com/cozystack/etcd-operator/operator/internal/etcd"
	"github.com/cozystack/etcd-operator/operator/internal/etcd/etcdtest"
	"github.com/cozystack/etcd-operator/operator/internal/pki/pkitest"
	"github.com/cozystack/etcd-operator/operator/internal/tlsmaterial"
)

const ns = "tenant"

func cluster(mod func(*v1alpha2.EtcdCluster)) *v1alpha2.EtcdCluster {
	c := &v1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: ns, UID: "uid-c"},
		Spec: v1alpha2.EtcdClusterSpec{Version: "3.6.16"}}
	if mod != nil {
		mod(c)
	}
	return c
}

func withAuth(c *v1alpha2.EtcdCluster) {
	c.Spec.Auth = &v1alpha2.AuthSpec{Enabled: true, RootCredentialsSecretRef: &corev1.LocalObjectReference{Name: "root"}}
	c.Spec.TLS = &v1alpha2.TLSSpec{Client: &v1alpha2.ClientTLS{ServerSecretRef: &corev1.LocalObjectReference{Name: "srv"}}}
	c.Status.AuthEnabled, c.Status.ClientTLSServing = true, true
}

func member(name string, registered bool, tls bool) v1alpha2.EtcdMember {
	m := v1alpha2.EtcdMember{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
		Labels: map[string]string{v1alpha2.LabelCluster: "c"}},
		Spec: v1alpha2.EtcdMemberSpec{ClusterName: "c"}}
	if registered {
		m.Spec.InitialCluster = name + "=http://" + name + ".c.tenant.svc:2380"
	}
	if tls {
		m.Spec.TLS = &v1alpha2.MemberTLS{ClientServerSecretRef: &corev1.LocalObjectReference{Name: "c-active-server-tls"}}
	}
	return m
}

func secret(name string, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: data}
}

func setup(t *testing.T, objs ...client.Object) (*Access, *etcdtest.FakeFactory) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha2.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	kube := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	f := etcdtest.NewFakeFactory()
	return New(f, tlsmaterial.NewSource(kube, nil), kube), f
}

func TestDialPlaintextAnonymousBeforeTheLatches(t *testing.T) {
	a, _ := setup(t)
	m := member("c-a", true, false)
	conn, err := a.Dial(context.Background(), Request{Cluster: cluster(nil), Members: []v1alpha2.EtcdMember{m, member("c-new", false, false)}})
	if err != nil {
		t.Fatal(err)
	}
	if got := conn.Target; len(got.Endpoints) != 1 || got.Endpoints[0] != "http://c-a.c.tenant.svc:2379" || got.TLS != nil || got.Username != "" {
		t.Errorf("target %+v, want the registered member only, plaintext, anonymous", got)
	}
}

func TestDialWithoutRegisteredMembers(t *testing.T) {
	a, _ := setup(t)
	_, err := a.Dial(context.Background(), Request{Cluster: cluster(nil), Members: []v1alpha2.EtcdMember{member("c-new", false, false)}})
	if !errors.Is(err, ErrNoEndpoints) {
		t.Errorf("err = %v, want ErrNoEndpoints", err)
	}
}

// Members are listed when the caller has none: the member controller's finalizer dials so.
func TestDialListsMembers(t *testing.T) {
	m := member("c-a", true, false)
	a, _ := setup(t, &m)
	conn, err := a.Dial(context.Background(), Request{Cluster: cluster(nil)})
	if err != nil || len(conn.Target.Endpoints) != 1 {
		t.Fatalf("conn %+v, err %v", conn.Target, err)
	}
}

func TestDialPinnedToAMember(t *testing.T) {
	a, _ := setup(t)
	members := []v1alpha2.EtcdMember{member("c-a", true, false), member("c-b", true, false)}
	conn, err := a.Dial(context.Background(), Request{Cluster: cluster(nil), Members: members, Member: "c-b"})
	if err != nil {
		t.Fatal(err)
	}
	if got := conn.Target; got.Key != "tenant/c/c-b" || len(got.Endpoints) != 1 || got.Endpoints[0] != "http://c-b.c.tenant.svc:2379" {
		t.Errorf("target %+v, want c-b alone under its own pool key", got)
	}
	if _, err := a.Dial(context.Background(), Request{Cluster: cluster(nil), Members: members, Member: "c-gone"}); err == nil {
		t.Error("dialing a member that is not there succeeded")
	}
}

func TestDialCredentialsOnceAuthIsOn(t *testing.T) {
	ca := pkitest.NewCA(t, "ca")
	srv := secret(v1alpha2.ActiveServerSecretName("c"), ca.SecretData(t, []string{"*.c.tenant.svc"}, nil, pkitest.ServerAndClient...))
	root := secret("root", map[string][]byte{"password": []byte("root-pw")})
	op := secret(v1alpha2.OperatorAuthSecretName("c"), authcred.OperatorSecretData(authcred.Operator{Username: v1alpha2.OperatorUser, Password: "op-pw"}))
	members := []v1alpha2.EtcdMember{member("c-a", true, true)}
	ctx := context.Background()

	t.Run("the operator's own user", func(t *testing.T) {
		a, f := setup(t, srv, root, op)
		f.Cluster("tenant/c").EnableAuthBehindOperator("root-pw")
		addUser(t, a, members)
		conn, err := a.Dial(ctx, Request{Cluster: cluster(withAuth), Members: members})
		if err != nil {
			t.Fatal(err)
		}
		if conn.Target.Username != v1alpha2.OperatorUser || conn.AsRoot || conn.Target.TLS == nil ||
			conn.Target.Endpoints[0] != "https://c-a.c.tenant.svc:2379" {
			t.Errorf("conn %+v as root %v, want the operator's user over TLS", conn.Target, conn.AsRoot)
		}
	})
	t.Run("root when etcd refuses the operator's user", func(t *testing.T) {
		a, f := setup(t, srv, root, op)
		f.Cluster("tenant/c").EnableAuthBehindOperator("root-pw") // no operator user in etcd
		conn, err := a.Dial(ctx, Request{Cluster: cluster(withAuth), Members: members})
		if err != nil || !conn.AsRoot || conn.Target.Username != v1alpha2.RootUser {
			t.Errorf("conn %+v, err %v, want root", conn.Target, err)
		}
	})
	t.Run("a passwordless root by its certificate when etcd refuses the operator's user", func(t *testing.T) {
		a, f := setup(t, srv, op)
		f.Cluster("tenant/c").EnableAuthBehindOperator("unused") // no operator user in etcd
		c := cluster(withAuth)
		c.Spec.Auth = &v1alpha2.AuthSpec{Enabled: true, PasswordlessRoot: true}
		conn, err := a.Dial(ctx, Request{Cluster: c, Members: members})
		if err != nil || !conn.AsRoot || conn.Target.Username != "" || conn.Target.Password != "" {
			t.Errorf("conn %+v, err %v, want root by certificate (no username)", conn.Target, err)
		}
	})
	t.Run("both refused", func(t *testing.T) {
		a, f := setup(t, srv, secret("root", map[string][]byte{"password": []byte("wrong")}), op)
		f.Cluster("tenant/c").EnableAuthBehindOperator("root-pw")
		if _, err := a.Dial(ctx, Request{Cluster: cluster(withAuth), Members: members}); !etcd.IsAuthFailed(err) {
			t.Errorf("err = %v, want etcd's auth failure", err)
		}
	})
	t.Run("root's Secret missing", func(t *testing.T) {
		a, f := setup(t, srv)
		f.Cluster("tenant/c").EnableAuthBehindOperator("root-pw")
		var missing *authcred.MissingError
		if _, err := a.Dial(ctx, Request{Cluster: cluster(withAuth), Members: members}); !errors.As(err, &missing) {
			t.Errorf("err = %v, want a MissingError", err)
		}
	})
	t.Run("TLS not issued yet", func(t *testing.T) {
		a, _ := setup(t, root, op)
		var missing *tlsmaterial.MissingSecretError
		if _, err := a.Dial(ctx, Request{Cluster: cluster(withAuth), Members: members}); !errors.As(err, &missing) {
			t.Errorf("err = %v, want a MissingSecretError", err)
		}
	})
	t.Run("a pass's own latch wins over the stored status", func(t *testing.T) {
		a, _ := setup(t, srv, root, op)
		c := cluster(withAuth)
		c.Status.AuthEnabled = false
		latched := Latches{ClientTLSServing: true, AuthEnabled: true}
		conn, err := a.Dial(ctx, Request{Cluster: c, Members: members, Latches: &latched})
		if err != nil || conn.Target.Username != v1alpha2.OperatorUser {
			t.Errorf("conn %+v, err %v, want the operator's user", conn.Target, err)
		}
	})
}

// addUser creates the operator's user in the fake etcd as root, as ensureAuth would.
func addUser(t *testing.T, a *Access, members []v1alpha2.EtcdMember) {
	t.Helper()
	ctx := context.Background()
	target, err := a.target(ctx, Request{Cluster: cluster(withAuth), Members: members})
	if err != nil {
		t.Fatal(err)
	}
	target.Username, target.Password = v1alpha2.RootUser, "root-pw"
	cli, err := a.factory.Client(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	if err := cli.UserAdd(ctx, v1alpha2.OperatorUser, "op-pw"); err != nil {
		t.Fatal(err)
	}
	if err := cli.UserGrantRole(ctx, v1alpha2.OperatorUser, v1alpha2.RootRole); err != nil {
		t.Fatal(err)
	}
}
