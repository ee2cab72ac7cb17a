package migrate

import (
	"bytes"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/cozystack/etcd-operator/internal/golden"
	"github.com/cozystack/etcd-operator/operator/internal/etcd"
	"github.com/cozystack/etcd-operator/operator/internal/migrate/legacy"
	"github.com/cozystack/etcd-operator/operator/internal/pki/pkitest"
)

// legacyCluster is the legacy operator's default cluster after its webhook: 3 replicas, 4Gi.
func legacyCluster() *legacy.EtcdCluster {
	l := &legacy.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "kv", Namespace: "tenant", UID: "legacy-uid"}}
	l.Spec.Replicas = ptr.To[int32](3)
	legacy.Default(l)
	return l
}

// input is a healthy live cluster of l: every member with its Ready Pod and unowned claim.
func input(l *legacy.EtcdCluster) Input {
	in := Input{Legacy: l, Token: legacy.Token(l), Live: Live{ClusterID: 0xc1}, Secrets: map[string]map[string][]byte{}}
	for i := range int(legacy.Replicas(l)) {
		name := legacy.PodName(l, i)
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("pod-" + name),
			OwnerReferences: []metav1.OwnerReference{{Kind: "StatefulSet", Name: l.Name, Controller: ptr.To(true)}}},
			Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
		pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: legacy.PVCName(l, i), UID: types.UID("pvc-" + name)}}
		in.Live.Members = append(in.Live.Members, LiveMember{
			Member: etcd.Member{ID: uint64(0xa0 + i), Name: name, PeerURLs: []string{legacy.PeerURL(l, i)}, ClientURLs: []string{legacy.ClientURL(l, i)}},
			Pod:    pod, PVC: pvc,
		})
	}
	return in
}

func TestTranslateDefaultCluster(t *testing.T) {
	tr := Translate(input(legacyCluster()))
	if tr.Findings.Blocked() {
		t.Fatalf("blocked: %s", tr.Findings.Blockers())
	}
	golden.Assert(t, "default-cluster", tr.Cluster)
	golden.Assert(t, "default-member", tr.Members[0])
	if len(tr.Members) != 3 {
		t.Fatalf("%d members", len(tr.Members))
	}
	s := tr.Cluster.Spec
	if *s.Options.QuotaBackendBytes != 4080218931 || s.Options.AutoCompactionRetention != "5m" || *s.Options.SnapshotCount != 10000 {
		t.Errorf("the legacy operator's implicit flags are not explicit: %+v", s.Options)
	}
	if s.Version != "3.5.12" || s.ImageRepository != "" || !s.TLS.Peer.AutoTLS || s.TLS.Client != nil {
		t.Errorf("version %s repo %q tls %+v", s.Version, s.ImageRepository, s.TLS)
	}
	want := "kv-0=https://kv-0.kv-headless.tenant.svc:2380,kv-1=https://kv-1.kv-headless.tenant.svc:2380,kv-2=https://kv-2.kv-headless.tenant.svc:2380"
	if got := tr.Members[2].Spec.InitialCluster; got != want {
		t.Errorf("initialCluster %s", got)
	}
	if st := tr.Members[2].Status; st.MemberID != "00000000000000a2" || !st.IsVoter || st.PodName != "kv-2" || st.PVCName != "data-kv-2" {
		t.Errorf("member status %+v", st)
	}
}

// TestTranslateFindings: every legacy field is translated, dropped with a warning, or blocks.
func TestTranslateFindings(t *testing.T) {
	cases := []struct {
		name     string
		mutate   func(*Input)
		severity Severity
		field    string
	}{
		{"emptyDir", func(in *Input) { in.Legacy.Spec.Storage.EmptyDir = &corev1.EmptyDirVolumeSource{} }, Blocker, "spec.storage.emptyDir"},
		{"claim template renamed", func(in *Input) { in.Legacy.Spec.Storage.VolumeClaimTemplate.Name = "etcd" }, Blocker, "spec.storage.volumeClaimTemplate.metadata.name"},
		{"learner", func(in *Input) { in.Live.Members[1].IsLearner = true }, Blocker, "member kv-1"},
		{"never started", func(in *Input) { in.Live.Members[1].Name = "" }, Blocker, "member 00000000000000a1"},
		{"no Pod", func(in *Input) { in.Live.Members[0].Pod = nil }, Blocker, "member kv-0"},
		{"Pod not Ready", func(in *Input) { in.Live.Members[0].Pod.Status.Conditions = nil }, Blocker, "member kv-0"},
		{"Pod of another owner", func(in *Input) { in.Live.Members[0].Pod.OwnerReferences[0].Name = "other" }, Blocker, "member kv-0"},
		{"no PVC", func(in *Input) { in.Live.Members[2].PVC = nil }, Blocker, "member kv-2"},
		{"PVC owned elsewhere", func(in *Input) { in.Live.Members[2].PVCOwner = "EtcdMember/other" }, Blocker, "member kv-2"},
		{"image by digest", etcdImage("quay.io/coreos/etcd@sha256:00"), Blocker, "spec.podTemplate.spec.containers[etcd].image"},
		{"image not a release", etcdImage("quay.io/coreos/etcd:latest"), Blocker, "spec.podTemplate.spec.containers[etcd].image"},
		{"auth without a client certificate", func(in *Input) { in.Live.AuthEnabled = true }, Blocker, "spec.security.enableAuth"},
		{"auth with a client certificate not CN root", func(in *Input) {
			tlsSecrets(func(s map[string]map[string][]byte) { s["op"]["tls.crt"] = clientCertPEM(t, "admin") })(in)
			in.Live.AuthEnabled = true
		}, Blocker, "spec.security.tls.clientSecret"},
		{"auth asked for but off in etcd", func(in *Input) {
			tlsSecrets(func(map[string]map[string][]byte) {})(in)
			in.Legacy.Spec.Security.EnableAuth = true
		}, Warning, "spec.security.enableAuth"},
		{"quota not a number", option("quota-backend-bytes", "8G"), Blocker, "spec.options.quota-backend-bytes"},
		{"compaction mode unknown", option("auto-compaction-mode", "hourly"), Blocker, "spec.options.auto-compaction-mode"},
		{"compaction retention not a duration", option("auto-compaction-retention", "1 day"), Blocker, "spec.options.auto-compaction-retention"},
		{"unknown option", option("max-txn-ops", "256"), Warning, "spec.options.max-txn-ops"},
		{"sidecar", func(in *Input) {
			in.Legacy.Spec.PodTemplate.Spec.Containers = append(in.Legacy.Spec.PodTemplate.Spec.Containers, corev1.Container{Name: "backup"})
		}, Warning, "spec.podTemplate.spec.containers[backup]"},
		{"etcd container env", func(in *Input) {
			in.Legacy.Spec.PodTemplate.Spec.Containers = []corev1.Container{{Name: "etcd", Env: []corev1.EnvVar{{Name: "GOMAXPROCS", Value: "2"}}}}
		}, Warning, "spec.podTemplate.spec.containers[etcd]"},
		{"pod security context", func(in *Input) {
			in.Legacy.Spec.PodTemplate.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](0)}
		}, Warning, "spec.podTemplate.spec.securityContext"},
		{"replicas differ", func(in *Input) { in.Legacy.Spec.Replicas = ptr.To[int32](5) }, Warning, "spec.replicas"},
		{"service template", func(in *Input) {
			in.Legacy.Spec.ServiceTemplate = &legacy.EmbeddedService{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
		}, Warning, "spec.serviceTemplate"},
		{"PDB template", func(in *Input) { in.Legacy.Spec.PodDisruptionBudgetTemplate = &legacy.EmbeddedPodDisruptionBudget{} }, Warning, "spec.podDisruptionBudgetTemplate"},
		{"bootstrap", func(in *Input) { in.Legacy.Spec.Bootstrap = &legacy.BootstrapSpec{} }, Warning, "spec.bootstrap"},
		{"server Secret missing", tlsSecrets(func(s map[string]map[string][]byte) { delete(s, "srv") }), Blocker, "spec.security.tls.serverSecret"},
		{"server Secret without ca.crt", tlsSecrets(func(s map[string]map[string][]byte) { delete(s["srv"], "ca.crt") }), Blocker, "spec.security.tls.serverSecret"},
		{"client CA of another CA", tlsSecrets(func(s map[string]map[string][]byte) { s["client-ca"]["ca.crt"] = []byte("other") }), Blocker, "spec.security.tls.clientTrustedCASecret"},
		{"peer CA of another CA", tlsSecrets(func(s map[string]map[string][]byte) { s["peer-ca"]["ca.crt"] = []byte("other") }), Blocker, "spec.security.tls.peerTrustedCASecret"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := input(legacyCluster())
			tc.mutate(&in)
			tr := Translate(in)
			for _, f := range tr.Findings {
				if f.Severity == tc.severity && f.Field == tc.field {
					return
				}
			}
			t.Errorf("no %s on %s; findings:\n%v", tc.severity, tc.field, tr.Findings)
		})
	}
}

// TestTranslateBYOTLS: the six legacy Secrets of one CA map onto the client and peer planes.
func TestTranslateBYOTLS(t *testing.T) {
	in := input(legacyCluster())
	tlsSecrets(func(map[string]map[string][]byte) {})(&in)
	tr := Translate(in)
	if tr.Findings.Blocked() {
		t.Fatalf("blocked: %s", tr.Findings.Blockers())
	}
	tl := tr.Cluster.Spec.TLS
	if tl.Client.ServerSecretRef.Name != "srv" || tl.Client.OperatorClientSecretRef.Name != "op" || tl.Peer.SecretRef.Name != "peer" || tl.Peer.AutoTLS {
		t.Errorf("tls %+v %+v", tl.Client, tl.Peer)
	}
	if !tr.Cluster.Status.ClientTLSServing || tr.Members[0].Spec.TLS.ClientPlaintext {
		t.Errorf("members serve TLS only: status %+v member tls %+v", tr.Cluster.Status, tr.Members[0].Spec.TLS)
	}
}

// TestTranslateAuth: a legacy cluster with auth on (root without a password, reached by the
// CN-root client certificate) is adopted with auth kept on and latched: no window without it.
func TestTranslateAuth(t *testing.T) {
	in := input(legacyCluster())
	tlsSecrets(func(s map[string]map[string][]byte) { s["op"]["tls.crt"] = clientCertPEM(t, "root") })(&in)
	in.Legacy.Spec.Security.EnableAuth = true
	in.Live.AuthEnabled = true
	tr := Translate(in)
	if tr.Findings.Blocked() {
		t.Fatalf("blocked: %s", tr.Findings.Blockers())
	}
	if a := tr.Cluster.Spec.Auth; a == nil || !a.Enabled || !a.PasswordlessRoot || a.RootCredentialsSecretRef != nil {
		t.Errorf("spec.auth %+v, want enabled with a passwordless root", a)
	}
	if !tr.Cluster.Status.AuthEnabled {
		t.Errorf("status.authEnabled not latched: the operator would dial anonymously")
	}
}

// clientCertPEM is a self-signed client certificate with the CN.
func clientCertPEM(t *testing.T, cn string) []byte {
	t.Helper()
	return pkitest.NewCA(t, "legacy-ca").ClientSecretData(t, cn)["tls.crt"]
}

func TestRenderPlan(t *testing.T) {
	in := input(legacyCluster())
	option("max-txn-ops", "256")(&in)
	st := &State{Namespace: "tenant", Name: "kv", Legacy: in.Legacy, Input: in}
	tr, names, err := Plan(st)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := Render(&b, st, tr, names); err != nil {
		t.Fatal(err)
	}
	golden.AssertText(t, "plan-default.txt", b.String())
	if !strings.Contains(b.String(), "WARNING spec.options.max-txn-ops") {
		t.Errorf("the plan does not name the dropped option")
	}
}

func etcdImage(image string) func(*Input) {
	return func(in *Input) {
		in.Legacy.Spec.PodTemplate.Spec.Containers = []corev1.Container{{Name: "etcd", Image: image}}
	}
}

func option(k, v string) func(*Input) {
	return func(in *Input) { in.Legacy.Spec.Options = map[string]string{k: v} }
}

// tlsSecrets gives the cluster the legacy operator's six TLS Secrets of one CA, then edits them.
func tlsSecrets(edit func(map[string]map[string][]byte)) func(*Input) {
	return func(in *Input) {
		in.Legacy.Spec.Security = &legacy.SecuritySpec{TLS: legacy.TLSSpec{
			ServerSecret: "srv", ServerTrustedCASecret: "srv-ca", ClientSecret: "op", ClientTrustedCASecret: "client-ca",
			PeerSecret: "peer", PeerTrustedCASecret: "peer-ca"}}
		pair := func() map[string][]byte {
			return map[string][]byte{"tls.crt": []byte("leaf"), "tls.key": []byte("key"), "ca.crt": []byte("CA")}
		}
		in.Secrets = map[string]map[string][]byte{"srv": pair(), "op": pair(), "peer": pair(),
			"srv-ca": {"tls.crt": []byte("CA")}, "client-ca": {"ca.crt": []byte("CA")}, "peer-ca": {"ca.crt": []byte("CA")}}
		edit(in.Secrets)
	}
}

// TestTranslateResuming: Pods the StatefulSet's deletion orphaned are adoptable only when an
// earlier run of the tool made the EtcdCluster (it orphaned them).
func TestTranslateResuming(t *testing.T) {
	in := input(legacyCluster())
	for _, m := range in.Live.Members {
		m.Pod.OwnerReferences = nil
	}
	if tr := Translate(in); !tr.Findings.Blocked() {
		t.Errorf("orphaned Pods adopted without an earlier run")
	}
	in.Resuming = true
	if tr := Translate(in); tr.Findings.Blocked() {
		t.Errorf("a resumed run is blocked: %s", tr.Findings.Blockers())
	}
}

// TestTranslateImageOnlyTemplate: a podTemplate that only sets the etcd image (the usual legacy
// manifest) drops nothing.
func TestTranslateImageOnlyTemplate(t *testing.T) {
	in := input(legacyCluster())
	etcdImage("quay.io/coreos/etcd:v3.5.35")(&in)
	tr := Translate(in)
	for _, f := range tr.Findings {
		if strings.HasPrefix(f.Field, "spec.podTemplate") {
			t.Errorf("unexpected finding %s", f)
		}
	}
	if tr.Cluster.Spec.Version != "3.5.35" {
		t.Errorf("version %s", tr.Cluster.Spec.Version)
	}
}
