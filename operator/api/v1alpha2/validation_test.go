package v1alpha2_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/internal/testenv"
	v1 "github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	var err error
	env, err = testenv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping envtest:", err)
	}
	os.Exit(code)
}

// newNamespace gives each test its own namespace so tests stay independent.
func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "cel-"}}
	if err := env.Client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

func cluster(ns, name string, mutate func(*v1.EtcdClusterSpec)) *v1.EtcdCluster {
	c := &v1.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1.EtcdClusterSpec{Version: "3.6.16"},
	}
	if mutate != nil {
		mutate(&c.Spec)
	}
	return c
}

func expectRejected(t *testing.T, err error, msg string) {
	t.Helper()
	if err == nil {
		t.Fatalf("expected rejection with %q, got success", msg)
	}
	if !apierrors.IsInvalid(err) {
		t.Fatalf("expected an Invalid error, got %v", err)
	}
	if !strings.Contains(err.Error(), msg) {
		t.Fatalf("expected message %q in\n%v", msg, err)
	}
}

// TestDefaultsAreApplied creates the cluster as a manifest would (only the version set): a typed Go
// client would send storage.size "0" and so bypass the size default.
func TestDefaultsAreApplied(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1.GroupVersion.String(), "kind": "EtcdCluster",
		"metadata": map[string]any{"name": "defaults", "namespace": ns},
		"spec":     map[string]any{"version": "3.6.16"},
	}}
	if err := env.Client.Create(ctx, u); err != nil {
		t.Fatal(err)
	}
	got := &v1.EtcdCluster{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(u), got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.Replicas == nil || *got.Spec.Replicas != v1.DefaultReplicas {
		t.Errorf("replicas default: got %v", got.Spec.Replicas)
	}
	if got.Spec.Storage.Size.Cmp(resource.MustParse(v1.DefaultStorageSize)) != 0 {
		t.Errorf("storage.size default: got %s", got.Spec.Storage.Size.String())
	}
	if got.Spec.Storage.Medium != v1.StorageMediumDefault {
		t.Errorf("storage.medium default: got %q", got.Spec.Storage.Medium)
	}
	if got.Spec.ProgressDeadlineSeconds == nil || *got.Spec.ProgressDeadlineSeconds != v1.DefaultProgressDeadlineSeconds {
		t.Errorf("progressDeadlineSeconds default: got %v", got.Spec.ProgressDeadlineSeconds)
	}
}

func TestCreateRejections(t *testing.T) {
	ns := newNamespace(t)
	memory := func(s *v1.EtcdClusterSpec) { s.Storage.Medium = v1.StorageMediumMemory }
	cases := []struct {
		name   string
		mutate func(*v1.EtcdClusterSpec)
		msg    string
	}{
		{"version with v", func(s *v1.EtcdClusterSpec) { s.Version = "v3.6.16" }, v1.MsgVersionFormat},
		{"version without patch", func(s *v1.EtcdClusterSpec) { s.Version = "3.6" }, v1.MsgVersionFormat},
		{"pause with memory", func(s *v1.EtcdClusterSpec) { memory(s); s.Replicas = ptr.To[int32](0) }, v1.MsgPauseMemory},
		{"memory with zero size", func(s *v1.EtcdClusterSpec) { memory(s); s.Storage.Size = resource.MustParse("0") }, v1.MsgMemorySizePositive},
		{"auth without client tls", func(s *v1.EtcdClusterSpec) {
			s.Auth = &v1.AuthSpec{Enabled: true, RootCredentialsSecretRef: &corev1.LocalObjectReference{Name: "root"}}
		}, v1.MsgAuthRequiresClientTLS},
		{"auth without secret", func(s *v1.EtcdClusterSpec) {
			s.TLS = &v1.TLSSpec{Client: &v1.ClientTLS{ServerSecretRef: &corev1.LocalObjectReference{Name: "srv"}}}
			s.Auth = &v1.AuthSpec{Enabled: true}
		}, v1.MsgAuthRequiresSecret},
		{"auth with both a root secret and a passwordless root", func(s *v1.EtcdClusterSpec) {
			authOn("root")(s)
			s.Auth.PasswordlessRoot = true
		}, v1.MsgAuthRootExclusive},
		{"client tls with both sources", func(s *v1.EtcdClusterSpec) {
			s.TLS = &v1.TLSSpec{Client: &v1.ClientTLS{
				ServerSecretRef: &corev1.LocalObjectReference{Name: "srv"},
				CertManager:     &v1.ClientCertManager{ServerIssuerRef: v1.IssuerReference{Name: "ca"}},
			}}
		}, v1.MsgClientTLSSource},
		{"client tls operator secret with cert-manager", func(s *v1.EtcdClusterSpec) {
			s.TLS = &v1.TLSSpec{Client: &v1.ClientTLS{
				OperatorClientSecretRef: &corev1.LocalObjectReference{Name: "op"},
				CertManager:             &v1.ClientCertManager{ServerIssuerRef: v1.IssuerReference{Name: "ca"}},
			}}
		}, v1.MsgClientTLSOperatorSecret},
		{"peer tls without source", func(s *v1.EtcdClusterSpec) { s.TLS = &v1.TLSSpec{Peer: &v1.PeerTLS{}} }, v1.MsgPeerTLSSource},
		{"peer autoTLS beside a secret", func(s *v1.EtcdClusterSpec) {
			s.TLS = &v1.TLSSpec{Peer: &v1.PeerTLS{AutoTLS: true, SecretRef: &corev1.LocalObjectReference{Name: "peer"}}}
		}, v1.MsgPeerTLSSource},
		{"layout with one Service name", func(s *v1.EtcdClusterSpec) { s.Layout = &v1.Layout{HeadlessServiceName: "kv-headless"} }, v1.MsgLayoutServices},
		{"layout with one Service for both", func(s *v1.EtcdClusterSpec) {
			s.Layout = &v1.Layout{HeadlessServiceName: "kv", ClientServiceName: "kv"}
		}, v1.MsgLayoutServices},
		{"layout data dir climbing out", func(s *v1.EtcdClusterSpec) { s.Layout = &v1.Layout{DataDirSubPath: ".."} }, v1.MsgLayoutSubPath},
		{"layout data dir nested", func(s *v1.EtcdClusterSpec) { s.Layout = &v1.Layout{DataDirSubPath: "a/b"} }, v1.MsgLayoutSubPath},
		{"restore with memory", func(s *v1.EtcdClusterSpec) {
			memory(s)
			s.Bootstrap = &v1.BootstrapSpec{Restore: &v1.RestoreSpec{Source: v1.RestoreSource{
				PVC: &v1.PVCLocation{ClaimName: "snaps", SubPath: "a.db"}}}}
		}, v1.MsgRestoreMemory},
		{"restore from two locations", func(s *v1.EtcdClusterSpec) {
			s.Bootstrap = &v1.BootstrapSpec{Restore: &v1.RestoreSpec{Source: v1.RestoreSource{
				PVC: &v1.PVCLocation{ClaimName: "snaps", SubPath: "a.db"},
				S3: &v1.S3Location{Endpoint: "http://s3", Bucket: "b", Key: "k",
					CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3"}}}}}
		}, v1.MsgRestoreSource},
		{"restore s3 without key", func(s *v1.EtcdClusterSpec) {
			s.Bootstrap = &v1.BootstrapSpec{Restore: &v1.RestoreSpec{Source: v1.RestoreSource{
				S3: &v1.S3Location{Endpoint: "http://s3", Bucket: "b", CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3"}}}}}
		}, v1.MsgRestoreS3Key},
		{"restore pvc without subPath", func(s *v1.EtcdClusterSpec) {
			s.Bootstrap = &v1.BootstrapSpec{Restore: &v1.RestoreSpec{Source: v1.RestoreSource{
				PVC: &v1.PVCLocation{ClaimName: "snaps"}}}}
		}, v1.MsgRestorePVCSubPath},
		{"image repository with tag", func(s *v1.EtcdClusterSpec) { s.ImageRepository = "mirror.local:5000/etcd:v3.6.16" }, v1.MsgImageRepositoryNoTag},
		{"image repository with digest", func(s *v1.EtcdClusterSpec) { s.ImageRepository = "mirror.local/etcd@sha256:00" }, v1.MsgImageRepositoryNoTag},
		{"priority class not a DNS name", func(s *v1.EtcdClusterSpec) { s.PriorityClassName = "High_Priority" }, v1.MsgPriorityClassNameFormat},
		{"cert-manager issuer of an unknown kind", func(s *v1.EtcdClusterSpec) {
			s.TLS = peerIssuer(v1.IssuerReference{Name: "ca", Kind: "VaultIssuer"})
		}, v1.MsgIssuerKind},
		{"cert-manager.io group named with an unknown kind", func(s *v1.EtcdClusterSpec) {
			s.TLS = peerIssuer(v1.IssuerReference{Name: "ca", Kind: "VaultIssuer", Group: "cert-manager.io"})
		}, v1.MsgIssuerKind},
		{"renewBefore not shorter than duration", func(s *v1.EtcdClusterSpec) {
			s.TLS = peerIssuer(v1.IssuerReference{Name: "ca"})
			s.TLS.CertificateTemplate = &v1.CertificateTemplate{Duration: &metav1.Duration{Duration: time.Hour}, RenewBefore: &metav1.Duration{Duration: time.Hour}}
		}, v1.MsgRenewBeforeDuration},
		{"RSA key too small", func(s *v1.EtcdClusterSpec) {
			s.TLS = peerIssuer(v1.IssuerReference{Name: "ca"})
			s.TLS.CertificateTemplate = &v1.CertificateTemplate{PrivateKey: &v1.PrivateKeyTemplate{Algorithm: v1.PrivateKeyRSA, Size: 1024}}
		}, v1.MsgPrivateKeySize},
		{"Ed25519 with a size", func(s *v1.EtcdClusterSpec) {
			s.TLS = peerIssuer(v1.IssuerReference{Name: "ca"})
			s.TLS.CertificateTemplate = &v1.CertificateTemplate{PrivateKey: &v1.PrivateKeyTemplate{Algorithm: v1.PrivateKeyEd25519, Size: 256}}
		}, v1.MsgPrivateKeySize},
		{"ECDSA key of no curve", func(s *v1.EtcdClusterSpec) {
			s.TLS = peerIssuer(v1.IssuerReference{Name: "ca"})
			s.TLS.CertificateTemplate = &v1.CertificateTemplate{PrivateKey: &v1.PrivateKeyTemplate{Size: 300}}
		}, v1.MsgPrivateKeySize},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := env.Client.Create(context.Background(), cluster(ns, fmt.Sprintf("bad-%d", i), tc.mutate))
			expectRejected(t, err, tc.msg)
		})
	}
}

func TestAcceptedAdditions(t *testing.T) {
	ns := newNamespace(t)
	c := cluster(ns, "additions", func(s *v1.EtcdClusterSpec) {
		s.Replicas = ptr.To[int32](4) // even is accepted (with a Warning Event from the operator)
		s.ImageRepository = "mirror.local:5000/coreos/etcd"
		s.PriorityClassName = "system-cluster-critical"
		s.NodeSelector = map[string]string{"disk": "ssd"}
		s.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
		// What etcd-migrate writes for a cluster of the legacy operator.
		s.TLS = &v1.TLSSpec{Peer: &v1.PeerTLS{AutoTLS: true}}
		s.Layout = &v1.Layout{HeadlessServiceName: "additions-headless", ClientServiceName: "additions", DataDirSubPath: "default.etcd"}
	})
	if err := env.Client.Create(context.Background(), c); err != nil {
		t.Fatal(err)
	}
}

func TestUpdateRejections(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	cases := []struct {
		name    string
		initial func(*v1.EtcdClusterSpec)
		update  func(*v1.EtcdClusterSpec)
		msg     string
	}{
		{"medium change", nil, func(s *v1.EtcdClusterSpec) { s.Storage.Medium = v1.StorageMediumMemory }, v1.MsgMediumImmutable},
		{"size shrink", func(s *v1.EtcdClusterSpec) { s.Storage.Size = resource.MustParse("2Gi") },
			func(s *v1.EtcdClusterSpec) { s.Storage.Size = resource.MustParse("1Gi") }, v1.MsgSizeNoShrink},
		{"storage class added", nil, func(s *v1.EtcdClusterSpec) { s.Storage.StorageClassName = ptr.To("fast") }, v1.MsgStorageClassAddRemove},
		{"storage class changed", func(s *v1.EtcdClusterSpec) { s.Storage.StorageClassName = ptr.To("fast") },
			func(s *v1.EtcdClusterSpec) { s.Storage.StorageClassName = ptr.To("slow") }, v1.MsgStorageClassImmutable},
		{"peer tls added", nil, func(s *v1.EtcdClusterSpec) {
			s.TLS = &v1.TLSSpec{Peer: &v1.PeerTLS{SecretRef: &corev1.LocalObjectReference{Name: "peer"}}}
		}, v1.MsgTLSPeerImmutable},
		{"peer tls added beside client tls", func(s *v1.EtcdClusterSpec) { s.TLS = clientIssuer() },
			func(s *v1.EtcdClusterSpec) { s.TLS.Peer = peerIssuer(v1.IssuerReference{Name: "ca"}).Peer }, v1.MsgTLSPeerImmutable},
		{"peer issuer changed", func(s *v1.EtcdClusterSpec) { s.TLS = peerIssuer(v1.IssuerReference{Name: "ca"}) },
			func(s *v1.EtcdClusterSpec) { s.TLS.Peer.CertManager.IssuerRef.Name = "other" }, v1.MsgTLSPeerImmutable},
		{"client tls removed", func(s *v1.EtcdClusterSpec) { s.TLS = clientIssuer() },
			func(s *v1.EtcdClusterSpec) { s.TLS = nil }, v1.MsgTLSClientImmutable},
		{"client tls removed beside peer tls", func(s *v1.EtcdClusterSpec) {
			s.TLS = clientIssuer()
			s.TLS.Peer = peerIssuer(v1.IssuerReference{Name: "ca"}).Peer
		}, func(s *v1.EtcdClusterSpec) { s.TLS.Client = nil }, v1.MsgTLSClientImmutable},
		{"client issuer changed", func(s *v1.EtcdClusterSpec) { s.TLS = clientIssuer() },
			func(s *v1.EtcdClusterSpec) { s.TLS.Client.CertManager.ServerIssuerRef.Name = "other" }, v1.MsgTLSClientImmutable},
		{"client mTLS added after client tls", func(s *v1.EtcdClusterSpec) { s.TLS = clientIssuer() },
			func(s *v1.EtcdClusterSpec) {
				s.TLS.Client.CertManager.OperatorClientIssuerRef = &v1.IssuerReference{Name: "ca"}
			}, v1.MsgTLSClientImmutable},
		{"auth without client tls", nil, authOnly("root"), v1.MsgAuthRequiresClientTLS},
		{"auth turned off", authOn("root"), func(s *v1.EtcdClusterSpec) { s.Auth.Enabled = false }, v1.MsgAuthNoDisable},
		{"auth removed", authOn("root"), func(s *v1.EtcdClusterSpec) { s.Auth = nil }, v1.MsgAuthNoDisable},
		{"passwordless root turned on", authOn("root"), func(s *v1.EtcdClusterSpec) {
			s.Auth = &v1.AuthSpec{Enabled: true, PasswordlessRoot: true}
		}, v1.MsgAuthPasswordlessFixed},
		{"passwordless root turned off", authPasswordless, func(s *v1.EtcdClusterSpec) {
			s.Auth = &v1.AuthSpec{Enabled: true, RootCredentialsSecretRef: &corev1.LocalObjectReference{Name: "root"}}
		}, v1.MsgAuthPasswordlessFixed},
		{"peer certificates to autoTLS", func(s *v1.EtcdClusterSpec) { s.TLS = peerIssuer(v1.IssuerReference{Name: "ca"}) },
			func(s *v1.EtcdClusterSpec) { s.TLS.Peer = &v1.PeerTLS{AutoTLS: true} }, v1.MsgTLSPeerImmutable},
		{"peer autoTLS removed", func(s *v1.EtcdClusterSpec) { s.TLS = &v1.TLSSpec{Peer: &v1.PeerTLS{AutoTLS: true}} },
			func(s *v1.EtcdClusterSpec) { s.TLS.Peer = nil }, v1.MsgTLSPeerImmutable},
		{"layout added", nil, func(s *v1.EtcdClusterSpec) { s.Layout = &v1.Layout{DataDirSubPath: "default.etcd"} }, v1.MsgLayoutImmutable},
		{"layout removed", func(s *v1.EtcdClusterSpec) { s.Layout = &v1.Layout{DataDirSubPath: "default.etcd"} },
			func(s *v1.EtcdClusterSpec) { s.Layout = nil }, v1.MsgLayoutImmutable},
		{"layout renamed", func(s *v1.EtcdClusterSpec) { s.Layout = &v1.Layout{HeadlessServiceName: "a", ClientServiceName: "b"} },
			func(s *v1.EtcdClusterSpec) { s.Layout.ClientServiceName = "c" }, v1.MsgLayoutImmutable},
		{"bootstrap added", nil, func(s *v1.EtcdClusterSpec) {
			s.Bootstrap = &v1.BootstrapSpec{Restore: &v1.RestoreSpec{Source: v1.RestoreSource{
				PVC: &v1.PVCLocation{ClaimName: "snaps", SubPath: "a.db"}}}}
		}, v1.MsgBootstrapAddRemove},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := cluster(ns, fmt.Sprintf("upd-%d", i), tc.initial)
			if err := env.Client.Create(ctx, c); err != nil {
				t.Fatal(err)
			}
			tc.update(&c.Spec)
			expectRejected(t, env.Client.Update(ctx, c), tc.msg)
		})
	}
}

// TestVersionPaths: spec.version follows etcd's upgrade path, checked where the user writes it.
func TestVersionPaths(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	for i, tc := range []struct {
		from, to string
		allowed  bool
	}{
		{"3.6.16", "3.6.17", true},  // patch up
		{"3.6.16", "3.6.1", true},   // patch down
		{"3.5.21", "3.6.16", true},  // one minor up
		{"3.6.16", "3.7.3", true},   // one minor up
		{"3.6.16", "3.6.16", true},  // unchanged
		{"3.5.21", "3.7.3", false},  // a minor skipped
		{"3.7.3", "3.6.16", true},   // one minor down (etcd's downgrade)
		{"3.6.16", "3.5.21", true},  // one minor down (etcd's downgrade)
		{"3.5.21", "3.4.30", false}, // 3.5 has no downgrade procedure
		{"3.7.3", "3.5.21", false},  // two minors down
		{"3.6.16", "4.0.0", false},  // major up
		{"3.6.16", "4.7.0", false},  // major up, minor up
		{"3.9.0", "3.10.0", true},   // numbers, not strings
	} {
		t.Run(tc.from+"->"+tc.to, func(t *testing.T) {
			c := cluster(ns, fmt.Sprintf("ver-%d", i), func(s *v1.EtcdClusterSpec) { s.Version = tc.from })
			if err := env.Client.Create(ctx, c); err != nil {
				t.Fatal(err)
			}
			c.Spec.Version = tc.to
			err := env.Client.Update(ctx, c)
			if tc.allowed && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !tc.allowed {
				expectRejected(t, err, v1.MsgVersionPath)
			}
		})
	}
}

// TestVersionReachableFromMembers: two edits that each follow the path but together skip a
// minor are refused while a member still runs the old version.
func TestVersionReachableFromMembers(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	c := cluster(ns, "reach", nil)
	if err := env.Client.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	running := func(v string) {
		t.Helper()
		c.Status.Members = []v1.ClusterMemberStatus{{Name: "reach-a", Version: v}, {Name: "reach-b", Version: "3.6.16"}}
		if err := env.Client.Status().Update(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	running("3.6.16")
	c.Spec.Version = "3.7.3"
	if err := env.Client.Update(ctx, c); err != nil {
		t.Fatal(err)
	}
	c.Spec.Version = "3.8.0" // one minor above the spec, two above what members run
	expectRejected(t, env.Client.Update(ctx, c), v1.MsgVersionReachable)
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(c), c); err != nil {
		t.Fatal(err)
	}
	c.Spec.Version = "3.7.4" // a patch of the running upgrade
	if err := env.Client.Update(ctx, c); err != nil {
		t.Fatal(err)
	}
	c.Spec.Version = "3.6.16" // back down: a member already runs 3.7, one minor down from it
	if err := env.Client.Update(ctx, c); err != nil {
		t.Fatalf("a downgrade back to what members ran: %v", err)
	}
	running("3.7.3")          // every member on 3.7 but one on 3.6 ...
	c.Spec.Version = "3.5.35" // ... one minor below the spec, two below a member
	expectRejected(t, env.Client.Update(ctx, c), v1.MsgVersionReachable)
}

// TestClientTLSAddedToRunningCluster: spec.tls.client may be added to a plaintext cluster (the
// operator rolls it over to TLS), alone, with mTLS, beside a certificate template, or together
// with auth.
func TestClientTLSAddedToRunningCluster(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	cases := []struct {
		name   string
		update func(*v1.EtcdClusterSpec)
	}{
		{"cert-manager", func(s *v1.EtcdClusterSpec) { s.TLS = clientIssuer() }},
		{"cert-manager mTLS", func(s *v1.EtcdClusterSpec) {
			s.TLS = clientIssuer()
			s.TLS.Client.CertManager.OperatorClientIssuerRef = &v1.IssuerReference{Name: "ca"}
		}},
		{"BYO with a template", func(s *v1.EtcdClusterSpec) {
			s.TLS = &v1.TLSSpec{Client: &v1.ClientTLS{ServerSecretRef: &corev1.LocalObjectReference{Name: "srv"}},
				CertificateTemplate: &v1.CertificateTemplate{Duration: &metav1.Duration{Duration: 2160 * time.Hour}}}
		}},
		{"with auth", authOn("root")},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := cluster(ns, fmt.Sprintf("add-tls-%d", i), nil)
			if err := env.Client.Create(ctx, c); err != nil {
				t.Fatal(err)
			}
			tc.update(&c.Spec)
			if err := env.Client.Update(ctx, c); err != nil {
				t.Fatalf("adding spec.tls.client rejected: %v", err)
			}
		})
	}
}

// authOnly: auth with the given root Secret, without client TLS.
func authOnly(secret string) func(*v1.EtcdClusterSpec) {
	return func(s *v1.EtcdClusterSpec) {
		s.Auth = &v1.AuthSpec{Enabled: true, RootCredentialsSecretRef: &corev1.LocalObjectReference{Name: secret}}
	}
}

// authOn: client TLS (auth requires it) and auth with the given root Secret.
func authOn(secret string) func(*v1.EtcdClusterSpec) {
	return func(s *v1.EtcdClusterSpec) {
		s.TLS = &v1.TLSSpec{Client: &v1.ClientTLS{ServerSecretRef: &corev1.LocalObjectReference{Name: "srv"}}}
		s.Auth = &v1.AuthSpec{Enabled: true, RootCredentialsSecretRef: &corev1.LocalObjectReference{Name: secret}}
	}
}

// authPasswordless: client TLS and auth with a root that has no password.
func authPasswordless(s *v1.EtcdClusterSpec) {
	s.TLS = &v1.TLSSpec{Client: &v1.ClientTLS{ServerSecretRef: &corev1.LocalObjectReference{Name: "srv"}}}
	s.Auth = &v1.AuthSpec{Enabled: true, PasswordlessRoot: true}
}

// TestPeerAutoTLSToCertificatesAccepted: peers may move from autoTLS to certificates of either
// source on a running cluster (the operator rolls it out in two steps).
func TestPeerAutoTLSToCertificatesAccepted(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	for i, peer := range []*v1.PeerTLS{
		{SecretRef: &corev1.LocalObjectReference{Name: "peer"}},
		peerIssuer(v1.IssuerReference{Name: "ca"}).Peer,
	} {
		c := cluster(ns, fmt.Sprintf("autotls-%d", i), func(s *v1.EtcdClusterSpec) { s.TLS = &v1.TLSSpec{Peer: &v1.PeerTLS{AutoTLS: true}} })
		if err := env.Client.Create(ctx, c); err != nil {
			t.Fatal(err)
		}
		c.Spec.TLS.Peer = peer
		if err := env.Client.Update(ctx, c); err != nil {
			t.Errorf("autoTLS to %+v refused: %v", peer, err)
		}
	}
}

// TestAuthUpdatesAccepted: auth may be turned on for a running cluster (added, or flipped from
// disabled), and its Secret reference may change (a rotation through a new Secret).
func TestAuthUpdatesAccepted(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	tlsOnly := func(s *v1.EtcdClusterSpec) {
		s.TLS = &v1.TLSSpec{Client: &v1.ClientTLS{ServerSecretRef: &corev1.LocalObjectReference{Name: "srv"}}}
	}
	cases := []struct {
		name    string
		initial func(*v1.EtcdClusterSpec)
		update  func(*v1.EtcdClusterSpec)
	}{
		{"auth added", tlsOnly, authOn("root")},
		{"auth flipped on", func(s *v1.EtcdClusterSpec) { tlsOnly(s); s.Auth = &v1.AuthSpec{} }, authOn("root")},
		{"secret changed", authOn("root"), authOn("root-2")},
		{"disabled auth removed", func(s *v1.EtcdClusterSpec) { tlsOnly(s); s.Auth = &v1.AuthSpec{} },
			func(s *v1.EtcdClusterSpec) { s.Auth = nil }},
		{"passwordless root added with auth", tlsOnly, authPasswordless},
		{"passwordless root chosen before auth is on", func(s *v1.EtcdClusterSpec) { tlsOnly(s); s.Auth = &v1.AuthSpec{PasswordlessRoot: true} },
			authOn("root")},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := cluster(ns, fmt.Sprintf("auth-%d", i), tc.initial)
			if err := env.Client.Create(ctx, c); err != nil {
				t.Fatal(err)
			}
			tc.update(&c.Spec)
			if err := env.Client.Update(ctx, c); err != nil {
				t.Fatalf("update rejected: %v", err)
			}
		})
	}
}

// The certificate template is the one part of spec.tls that may change after create, and a
// template alone may be added to (or dropped from) a TLS cluster.
func TestCertificateTemplateIsMutable(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	c := cluster(ns, "template", func(s *v1.EtcdClusterSpec) {
		s.TLS = clientIssuer()
		s.TLS.Peer = peerIssuer(v1.IssuerReference{Name: "ca", Kind: "ClusterIssuer"}).Peer
	})
	if err := env.Client.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	steps := []*v1.CertificateTemplate{
		{Duration: &metav1.Duration{Duration: 48 * time.Hour}, RenewBefore: &metav1.Duration{Duration: 24 * time.Hour}},
		{PrivateKey: &v1.PrivateKeyTemplate{Algorithm: v1.PrivateKeyRSA, Size: 4096}},
		{PrivateKey: &v1.PrivateKeyTemplate{Algorithm: v1.PrivateKeyEd25519}},
		nil,
	}
	for i, tpl := range steps {
		c.Spec.TLS.CertificateTemplate = tpl
		if err := env.Client.Update(ctx, c); err != nil {
			t.Fatalf("step %d: template change refused: %v", i, err)
		}
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(c), c); err != nil {
		t.Fatal(err)
	}
	c.Spec.TLS.CertificateTemplate = &v1.CertificateTemplate{PrivateKey: &v1.PrivateKeyTemplate{}}
	if err := env.Client.Update(ctx, c); err != nil {
		t.Fatal(err)
	}
	if got := c.Spec.TLS.CertificateTemplate.PrivateKey.Algorithm; got != v1.PrivateKeyECDSA {
		t.Errorf("privateKey.algorithm default: got %q, want ECDSA", got)
	}
}

// External issuers: any kind once a group other than cert-manager.io is named; a bare
// reference still defaults to a cert-manager.io Issuer as in the public operator.
func TestIssuerReferences(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	c := cluster(ns, "external", func(s *v1.EtcdClusterSpec) {
		s.TLS = &v1.TLSSpec{
			Client: &v1.ClientTLS{CertManager: &v1.ClientCertManager{ServerIssuerRef: v1.IssuerReference{Name: "pca", Kind: "AWSPCAClusterIssuer", Group: "awspca.cert-manager.io"}}},
			Peer:   peerIssuer(v1.IssuerReference{Name: "ca"}).Peer,
		}
	})
	if err := env.Client.Create(ctx, c); err != nil {
		t.Fatalf("external issuer refused: %v", err)
	}
	if got := c.Spec.TLS.Peer.CertManager.IssuerRef; got.Kind != "Issuer" || got.Group != "" {
		t.Errorf("bare issuerRef defaults: got kind %q group %q, want Issuer and no group", got.Kind, got.Group)
	}
}

func clientIssuer() *v1.TLSSpec {
	return &v1.TLSSpec{Client: &v1.ClientTLS{CertManager: &v1.ClientCertManager{ServerIssuerRef: v1.IssuerReference{Name: "ca"}}}}
}

func peerIssuer(ref v1.IssuerReference) *v1.TLSSpec {
	return &v1.TLSSpec{Peer: &v1.PeerTLS{CertManager: &v1.PeerCertManager{IssuerRef: ref}}}
}

func TestScaleSubresource(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	c := cluster(ns, "scaled", nil)
	if err := env.Client.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	c.Status.ReadyMembers = 3
	c.Status.Selector = v1.LabelCluster + "=scaled"
	if err := env.Client.Status().Update(ctx, c); err != nil {
		t.Fatal(err)
	}
	scale := &autoscalingv1.Scale{}
	if err := env.Client.SubResource("scale").Get(ctx, c, scale); err != nil {
		t.Fatal(err)
	}
	if scale.Spec.Replicas != 3 || scale.Status.Replicas != 3 || scale.Status.Selector != c.Status.Selector {
		t.Fatalf("unexpected scale: %+v", scale)
	}
	scale.Spec.Replicas = 5
	if err := env.Client.SubResource("scale").Update(ctx, c, client.WithSubResourceBody(scale)); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(c), c); err != nil {
		t.Fatal(err)
	}
	if *c.Spec.Replicas != 5 {
		t.Fatalf("scale did not reach spec.replicas: %d", *c.Spec.Replicas)
	}
}
