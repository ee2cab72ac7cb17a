package resources

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/cozystack/etcd-operator/internal/golden"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

func testCluster() *v1alpha2.EtcdCluster {
	return &v1alpha2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "etcd", Namespace: "tenant", UID: "cluster-uid"},
		Spec: v1alpha2.EtcdClusterSpec{
			Replicas: ptr.To[int32](3), Version: "3.6.16",
			AdditionalMetadata: &v1alpha2.AdditionalMetadata{
				Labels:      map[string]string{"team": "db", v1alpha2.LabelCluster: "spoofed"},
				Annotations: map[string]string{"note": "x", v1alpha2.LabelPrefix + "reserved": "dropped"},
			},
		},
	}
}

func testMember(name string) *v1alpha2.EtcdMember {
	return &v1alpha2.EtcdMember{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "tenant", UID: "member-uid"},
		Spec: v1alpha2.EtcdMemberSpec{
			ClusterName: "etcd", Version: "3.6.16",
			Storage:        v1alpha2.StorageSpec{Size: resource.MustParse("2Gi")},
			InitialCluster: name + "=http://" + name + ".etcd.tenant.svc:2380",
			ClusterToken:   "tenant-etcd-cluster-uid",
		},
	}
}

func TestServicesAndPDBGolden(t *testing.T) {
	c := testCluster()
	golden.Assert(t, "service-headless", HeadlessService(c))
	golden.Assert(t, "service-client", ClientService(c))
	golden.Assert(t, "pdb-3-voters", PodDisruptionBudget(c, 3))
}

func TestPodGolden(t *testing.T) {
	seed := testMember("etcd-abcde")
	seed.Spec.Bootstrap = true
	golden.Assert(t, "pod-seed", Pod(seed, PodOptions{}))
	golden.Assert(t, "pvc-seed", PVC(seed))

	learner := testMember("etcd-fghij")
	learner.Spec.Version = "3.5.35"
	learner.Spec.Storage = v1alpha2.StorageSpec{Medium: v1alpha2.StorageMediumMemory, Size: resource.MustParse("512Mi")}
	learner.Spec.Options = &v1alpha2.EtcdOptions{QuotaBackendBytes: ptr.To[int64](4 << 30), AutoCompactionMode: "periodic",
		AutoCompactionRetention: "5m", SnapshotCount: ptr.To[int64](10000)}
	learner.Spec.NodeSelector = map[string]string{"disk": "ssd"}
	learner.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
	learner.Spec.PriorityClassName = "system-cluster-critical"
	learner.Spec.ImageRepository = "mirror.local/etcd"
	learner.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "pull"}}
	learner.Spec.TLS = &v1alpha2.MemberTLS{ClientServerSecretRef: &corev1.LocalObjectReference{Name: "server-tls"},
		ClientMTLS: true, PeerSecretRef: &corev1.LocalObjectReference{Name: "peer-tls"}, TrustBundle: "etcd-trust-abc"}
	learner.Spec.Resources = corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}
	learner.Spec.InitialCluster = "etcd-abcde=https://etcd-abcde.etcd.tenant.svc:2380,etcd-fghij=" + NewPeerURL(learner, v1alpha2.MemberFQDN(learner, "cluster.local"))
	golden.Assert(t, "pod-memory-learner-tls", Pod(learner, PodOptions{ImageRepository: "quay.io/coreos/etcd", ClusterFormed: true, AgentImage: "ghcr.io/cozystack/etcd-operator:dev"}))
	if PVC(learner) != nil {
		t.Error("a tmpfs member must not get a PVC")
	}

	both := testMember("etcd-klmno")
	both.Spec.TLS = &v1alpha2.MemberTLS{ClientServerSecretRef: &corev1.LocalObjectReference{Name: "server-tls"},
		ClientMTLS: true, ClientPlaintext: true}
	golden.Assert(t, "pod-client-tls-and-plaintext", Pod(both, PodOptions{ClusterFormed: true}))
}

// While client TLS is added to a running cluster a member listens in both schemes on the
// client port and advertises https; without the plaintext phase it listens in https only.
func TestClientListenerPhases(t *testing.T) {
	m := testMember("etcd-abcde")
	tls := &v1alpha2.MemberTLS{ClientServerSecretRef: &corev1.LocalObjectReference{Name: "server-tls"}}
	both := *tls
	both.ClientPlaintext = true
	for _, tc := range []struct {
		name           string
		tls            *v1alpha2.MemberTLS
		listen, advert string
	}{
		{"plaintext", nil, "http://0.0.0.0:2379", "http://etcd-abcde.etcd.tenant.svc:2379"},
		{"plaintext flag without TLS", &v1alpha2.MemberTLS{ClientPlaintext: true}, "http://0.0.0.0:2379", "http://etcd-abcde.etcd.tenant.svc:2379"},
		{"both", &both, "http://0.0.0.0:2379,https://0.0.0.0:2379", "https://etcd-abcde.etcd.tenant.svc:2379"},
		{"tls", tls, "https://0.0.0.0:2379", "https://etcd-abcde.etcd.tenant.svc:2379"},
	} {
		m.Spec.TLS = tc.tls
		flags := EtcdFlags(m)
		for _, want := range []string{"--listen-client-urls=" + tc.listen, "--advertise-client-urls=" + tc.advert} {
			if !slices.Contains(flags, want) {
				t.Errorf("%s: flags %v lack %s", tc.name, flags, want)
			}
		}
		if hasCert := slices.Contains(flags, "--cert-file=/etc/etcd/tls/client/tls.crt"); hasCert != (tc.tls != nil && tc.tls.ClientServerSecretRef != nil) {
			t.Errorf("%s: --cert-file present=%v", tc.name, hasCert)
		}
	}
	tlsRev := PodRevision(Pod(&v1alpha2.EtcdMember{ObjectMeta: m.ObjectMeta, Spec: withTLS(m.Spec, tls)}, PodOptions{}))
	bothRev := PodRevision(Pod(&v1alpha2.EtcdMember{ObjectMeta: m.ObjectMeta, Spec: withTLS(m.Spec, &both)}, PodOptions{}))
	if tlsRev == bothRev {
		t.Error("dropping the plaintext listener must change the Pod revision (it is a rolling restart)")
	}
}

func withTLS(s v1alpha2.EtcdMemberSpec, t *v1alpha2.MemberTLS) v1alpha2.EtcdMemberSpec {
	s.TLS = t
	return s
}

func TestInitialClusterState(t *testing.T) {
	cases := []struct {
		name          string
		seed          bool
		memberID      string
		clusterFormed bool
		want          string
	}{
		{"fresh seed of a new cluster", true, "", false, "new"},
		{"seed that has run before", true, "8e9e05c52164694d", false, "existing"},
		{"seed of a formed cluster (data dir wiped)", true, "", true, "existing"},
		{"joining learner", false, "", false, "existing"},
		{"member of a formed cluster", false, "8e9e05c52164694d", true, "existing"},
	}
	for _, tc := range cases {
		m := testMember("m")
		m.Spec.Bootstrap, m.Status.MemberID = tc.seed, tc.memberID
		if got := InitialClusterState(m, tc.clusterFormed); got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.name, got, tc.want)
		}
		if got := Pod(m, PodOptions{ClusterFormed: tc.clusterFormed}).Annotations[v1alpha2.AnnotationInitialClusterState]; got != tc.want {
			t.Errorf("%s: Pod annotation %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestMinAvailable(t *testing.T) {
	cases := []struct{ voters, desired, want int32 }{
		{1, 1, 1}, {1, 3, 2}, {3, 3, 2}, {4, 3, 3}, {4, 5, 3}, {5, 5, 3}, {7, 7, 4}, {2, 1, 2}, {3, 0, 2},
	}
	for _, tc := range cases {
		if got := MinAvailable(tc.voters, tc.desired); got != tc.want {
			t.Errorf("MinAvailable(%d voters, %d desired) = %d, want %d", tc.voters, tc.desired, got, tc.want)
		}
	}
	if PodDisruptionBudget(testCluster(), 0) != nil {
		t.Error("no voters must mean no PDB")
	}
	off := testCluster()
	off.Spec.PodDisruptionBudget = &v1alpha2.PodDisruptionBudgetSpec{Enabled: ptr.To(false)}
	if PodDisruptionBudget(off, 3) != nil {
		t.Error("podDisruptionBudget.enabled=false must mean no PDB")
	}
	pdb := PodDisruptionBudget(testCluster(), 1)
	if pdb.Spec.MinAvailable.IntValue() != 2 || pdb.Spec.Selector.MatchLabels[v1alpha2.LabelRole] != v1alpha2.RoleVoter {
		t.Errorf("PDB of 1 voter toward 3: %+v", pdb.Spec)
	}
}

func TestMergeMetadata(t *testing.T) {
	got := MergeMetadata(map[string]string{"a": "user", "b": "user", v1alpha2.LabelPrefix + "x": "no"}, map[string]string{"b": "owned"})
	if len(got) != 2 || got["a"] != "user" || got["b"] != "owned" {
		t.Errorf("MergeMetadata = %v", got)
	}
	if MergeMetadata(nil, nil) != nil {
		t.Error("empty metadata must stay nil so objects compare equal")
	}
}

func TestImageAndProbes(t *testing.T) {
	m := testMember("m")
	if got := Image(m, ""); got != "quay.io/coreos/etcd:v3.6.16" {
		t.Errorf("default image %s", got)
	}
	if got := Image(m, "registry.local/etcd"); got != "registry.local/etcd:v3.6.16" {
		t.Errorf("operator repo image %s", got)
	}
	m.Spec.ImageRepository = "mirror/etcd"
	if got := Image(m, "registry.local/etcd"); got != "mirror/etcd:v3.6.16" {
		t.Errorf("member repo must win: %s", got)
	}
	for version, path := range map[string]string{"3.5.35": "/health", "3.6.16": "/readyz?exclude=non_learner", "3.7.3": "/readyz?exclude=non_learner"} {
		if got := readinessProbe(version).HTTPGet.Path; got != path {
			t.Errorf("readiness of %s = %s, want %s", version, got, path)
		}
	}
}

func TestDefaultAntiAffinityOnlyWhenUnset(t *testing.T) {
	m := testMember("m")
	pod := Pod(m, PodOptions{})
	terms := pod.Spec.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution
	if len(terms) != 1 || terms[0].PodAffinityTerm.TopologyKey != HostnameTopologyKey {
		t.Fatalf("default anti-affinity missing: %+v", pod.Spec.Affinity)
	}
	m.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{}}
	if Pod(m, PodOptions{}).Spec.Affinity.PodAntiAffinity != nil {
		t.Error("a user affinity must replace the default")
	}
}

func TestPodMeetsRestrictedPSS(t *testing.T) {
	pod := Pod(testMember("m"), PodOptions{})
	sc, csc := pod.Spec.SecurityContext, pod.Spec.Containers[0].SecurityContext
	switch {
	case !*sc.RunAsNonRoot, *sc.RunAsUser != 65532, *sc.FSGroup != 65532:
		t.Error("pod must run as 65532, non-root")
	case sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault:
		t.Error("seccomp RuntimeDefault required")
	case *csc.AllowPrivilegeEscalation, len(csc.Capabilities.Drop) != 1 || csc.Capabilities.Drop[0] != "ALL":
		t.Error("no privilege escalation, drop ALL")
	case *pod.Spec.AutomountServiceAccountToken:
		t.Error("no service account token")
	}
	for _, v := range pod.Spec.Volumes {
		if v.HostPath != nil {
			t.Error("hostPath volumes are not allowed")
		}
	}
	if !strings.HasPrefix(pod.Spec.Containers[0].Image, "quay.io/coreos/etcd:v") {
		t.Error(pod.Spec.Containers[0].Image)
	}
}

// A rebuild's survivor gets --force-new-cluster from its Pod's annotation, never from its
// command line: a container restart after the flag is cleared reads "false" and does not force
// a one-member cluster out of the grown-back one. The revision ignores it.
func TestForceNewClusterThroughAnnotation(t *testing.T) {
	m := testMember("etcd-abcde")
	steady := PodRevision(Pod(m, PodOptions{ClusterFormed: true}))
	m.Spec.ForceNewCluster = true
	forced := Pod(m, PodOptions{ClusterFormed: true})
	if got := forced.Annotations[v1alpha2.AnnotationForceNewCluster]; got != "true" {
		t.Errorf("forced Pod's annotation is %q, want true", got)
	}
	env := forced.Spec.Containers[0].Env
	if i := slices.IndexFunc(env, func(e corev1.EnvVar) bool { return e.Name == "ETCD_FORCE_NEW_CLUSTER" }); i < 0 ||
		env[i].ValueFrom == nil || !strings.Contains(env[i].ValueFrom.FieldRef.FieldPath, v1alpha2.AnnotationForceNewCluster) {
		t.Errorf("forced Pod's env %v does not read ETCD_FORCE_NEW_CLUSTER from its annotation", env)
	}
	if slices.Contains(forced.Spec.Containers[0].Command, "--force-new-cluster") {
		t.Error("--force-new-cluster is on the command line: every container restart would force again")
	}
	if got := PodRevision(Pod(m, PodOptions{ClusterFormed: true, Steady: true})); got != steady {
		t.Errorf("forcing changed the steady revision: %q != %q", got, steady)
	}
	m.Spec.ForceNewCluster = false
	if got := StartAnnotations(m, true)[v1alpha2.AnnotationForceNewCluster]; got != "false" {
		t.Errorf("cleared member's annotation is %q, want false", got)
	}
}

func TestPodRevision(t *testing.T) {
	m := testMember("etcd-abcde")
	base := PodRevision(Pod(m, PodOptions{}))
	if base == "" || base != PodRevision(Pod(m, PodOptions{})) {
		t.Fatalf("revision %q is not stable", base)
	}
	if got := PodRevision(Pod(m, PodOptions{ClusterFormed: true})); got != base {
		t.Errorf("the initial-cluster-state annotation changed the revision: %q != %q", got, base)
	}
	for name, change := range map[string]func(*v1alpha2.EtcdMember){
		"version": func(m *v1alpha2.EtcdMember) { m.Spec.Version = "3.6.17" },
		"resources": func(m *v1alpha2.EtcdMember) {
			m.Spec.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
		},
		"options": func(m *v1alpha2.EtcdMember) { m.Spec.Options = &v1alpha2.EtcdOptions{SnapshotCount: ptr.To[int64](5)} },
		"tolerations": func(m *v1alpha2.EtcdMember) {
			m.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}}
		},
	} {
		changed := m.DeepCopy()
		change(changed)
		if PodRevision(Pod(changed, PodOptions{})) == base {
			t.Errorf("changing %s kept revision %q", name, base)
		}
	}
}

func TestMemberURLs(t *testing.T) {
	m := testMember("etcd-abcde")
	m.Spec.TLS = &v1alpha2.MemberTLS{PeerSecretRef: &corev1.LocalObjectReference{Name: "peer"}}
	fqdn := "https://etcd-abcde.etcd.tenant.svc.cozy.local:2380"
	if got := NewPeerURL(m, v1alpha2.MemberFQDN(m, "cozy.local")); got != fqdn {
		t.Errorf("NewPeerURL = %s, want %s", got, fqdn)
	}
	for _, tc := range []struct{ initialCluster, peer, client string }{
		{"", "https://etcd-abcde.etcd.tenant.svc:2380", "http://etcd-abcde.etcd.tenant.svc:2379"},
		{"etcd-x=https://etcd-x.etcd.tenant.svc:2380,etcd-abcde=" + fqdn, fqdn, "http://etcd-abcde.etcd.tenant.svc.cozy.local:2379"},
		{"etcd-abcde=http://legacy-0.legacy.tenant.svc:2380", "http://legacy-0.legacy.tenant.svc:2380", "http://legacy-0.legacy.tenant.svc:2379"},
	} {
		m.Spec.InitialCluster = tc.initialCluster
		if got := PeerURL(m); got != tc.peer {
			t.Errorf("initialCluster %q: PeerURL = %s, want %s", tc.initialCluster, got, tc.peer)
		}
		if got := ClientURL(m); got != tc.client {
			t.Errorf("initialCluster %q: ClientURL = %s, want %s", tc.initialCluster, got, tc.client)
		}
	}
	for u, want := range map[string]bool{
		"https://etcd-abcde.etcd.tenant.svc:2380": true, fqdn: true, "http://etcd-abcdef.etcd.tenant.svc:2380": false,
		"http://etcd-abcde.other.tenant.svc:2380": false, "::bad": false,
	} {
		if got := IsMemberPeerURL(m, u); got != want {
			t.Errorf("IsMemberPeerURL(%s) = %v", u, got)
		}
	}
}

// TestAdoptedLayout: a member of a cluster adopted from the legacy operator keeps the names and
// paths its running Pods use, and so do members added to it later.
func TestAdoptedLayout(t *testing.T) {
	c := testCluster()
	c.Spec.TLS = &v1alpha2.TLSSpec{Peer: &v1alpha2.PeerTLS{AutoTLS: true}}
	c.Spec.Layout = &v1alpha2.Layout{HeadlessServiceName: "etcd-headless", ClientServiceName: "etcd", DataDirSubPath: "default.etcd"}
	if got := HeadlessService(c).Name; got != "etcd-headless" {
		t.Errorf("headless Service %s", got)
	}
	if got := ClientService(c).Name; got != "etcd" {
		t.Errorf("client Service %s", got)
	}
	m := NewMember(c, "etcd-tenant", false, nil, TemplateInputs{})
	m.Name, m.Namespace, m.Spec.InitialCluster = "etcd-abcde", "tenant", ""
	if got, want := PeerURL(m), "https://etcd-abcde.etcd-headless.tenant.svc:2380"; got != want {
		t.Errorf("PeerURL = %s, want %s", got, want)
	}
	if got, want := NewPeerURL(m, v1alpha2.MemberFQDN(m, "cluster.local")), "https://etcd-abcde.etcd-headless.tenant.svc.cluster.local:2380"; got != want {
		t.Errorf("NewPeerURL = %s, want %s", got, want)
	}
	m.Spec.InitialCluster = "etcd-abcde=" + PeerURL(m)
	pod := Pod(m, PodOptions{})
	if pod.Spec.Subdomain != "etcd-headless" {
		t.Errorf("subdomain %s", pod.Spec.Subdomain)
	}
	flags := pod.Spec.Containers[0].Command
	for _, want := range []string{"--data-dir=/var/lib/etcd/default.etcd", "--peer-auto-tls", "--listen-peer-urls=https://0.0.0.0:2380"} {
		if !slices.Contains(flags, want) {
			t.Errorf("flags %v lack %s", flags, want)
		}
	}
}
