package resources

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/cozystack/etcd-operator/internal/namecheck"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

// longestAdmitted is the longest name of kind its API admits: its CRD's cap, else a DNS
// subdomain's 253 characters.
func longestAdmitted(kind string) int {
	if max, ok := namecheck.CRDNameCaps()[kind]; ok {
		return max
	}
	return validation.DNS1123SubdomainMaxLength
}

// lastScheduleMinute is the due time of a scheduled run with the most digits the operator will
// see in its minute (8 until the year 2160).
var lastScheduleMinute = time.Date(2159, 12, 31, 23, 59, 0, 0, time.UTC)

// nameLimitCluster is a cluster with every plane on cert-manager certificates and auth on, so
// every object the operator can make for a cluster is made.
func nameLimitCluster(name string) *v1alpha2.EtcdCluster {
	issuer := v1alpha2.IssuerReference{Name: "ca", Kind: "Issuer"}
	return &v1alpha2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "tenant", UID: "cluster-uid"},
		Spec: v1alpha2.EtcdClusterSpec{Version: "3.6.16", Storage: v1alpha2.StorageSpec{Size: resource.MustParse("1Gi")},
			Auth: &v1alpha2.AuthSpec{Enabled: true, PasswordlessRoot: true},
			TLS: &v1alpha2.TLSSpec{
				Client: &v1alpha2.ClientTLS{CertManager: &v1alpha2.ClientCertManager{ServerIssuerRef: issuer, OperatorClientIssuerRef: &issuer}},
				Peer:   &v1alpha2.PeerTLS{CertManager: &v1alpha2.PeerCertManager{IssuerRef: issuer}},
			}},
	}
}

// derived is an object the operator makes, what made it and its kind.
type derived struct {
	where, kind string
	obj         metav1.Object
}

var agentRestore = &v1alpha2.MemberRestore{Source: v1alpha2.RestoreSource{PVC: &v1alpha2.PVCLocation{ClaimName: "backups", SubPath: "s.db"}}}

// clusterChildren are the objects the operator names after a cluster, built by the builders its
// controllers call; the quorum-loss restore's own children too. Its etcd cluster ID has 16 hex digits.
func clusterChildren(name string) []derived {
	c := nameLimitCluster(name)
	m := NewMember(c, "token", true, nil, TemplateInputs{TrustBundle: v1alpha2.TrustBundleName(c.Name, "1y2p0ij32e8e7")})
	created := m.DeepCopy()
	created.Name = namecheck.Generated(m.GenerateName)
	ql := QuorumLossRestore(c, "8e9e05c52164694d", "snap")
	out := []derived{
		{"HeadlessService(cluster)", "Service", HeadlessService(c)},
		{"ClientService(cluster)", "Service", ClientService(c)},
		{"PodDisruptionBudget(cluster)", "PodDisruptionBudget", PodDisruptionBudget(c, 3)},
		{"ActiveTLSSecret(cluster, server)", "Secret", ActiveTLSSecret(c, v1alpha2.ActiveServerSecretName(c.Name), nil, nil, nil)},
		{"ActiveTLSSecret(cluster, operator client)", "Secret", ActiveTLSSecret(c, v1alpha2.ActiveOperatorClientSecretName(c.Name), nil, nil, nil)},
		{"ActiveTLSSecret(cluster, peer)", "Secret", ActiveTLSSecret(c, v1alpha2.ActivePeerSecretName(c.Name), nil, nil, nil)},
		{"TrustBundle(cluster)", "ConfigMap", TrustBundle(c, m.Spec.TLS.TrustBundle, nil)},
		{"OperatorAuthSecret(cluster)", "Secret", OperatorAuthSecret(c, nil)},
		{"NewMember(cluster)", "EtcdMember", m},
		{"Pod(member)", "Pod", Pod(created, PodOptions{})},
		{"PVC(member)", "PersistentVolumeClaim", PVC(created)},
		{"QuorumLossRestore(cluster)", "EtcdRestore", ql},
		{"SafetySnapshot(quorum-loss restore)", "EtcdSnapshot", SafetySnapshot(ql, v1alpha2.SnapshotLocation{})},
		{"RestoreVerifyPod(quorum-loss restore)", "Pod", RestoreVerifyPod(ql, c, agentRestore, "agent")},
	}
	for _, cert := range DesiredCertificates(c, "cluster.local") {
		out = append(out, derived{"DesiredCertificates(cluster) " + strings.TrimPrefix(cert.Name, c.Name), "Certificate", cert})
	}
	return out
}

// restoreChildren are what a rollback names after its EtcdRestore.
func restoreChildren(name string) []derived {
	c := nameLimitCluster("etcd")
	er := &v1alpha2.EtcdRestore{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "tenant"},
		Spec: v1alpha2.EtcdRestoreSpec{ClusterRef: corev1.LocalObjectReference{Name: c.Name}}}
	return []derived{
		{"SafetySnapshot(restore)", "EtcdSnapshot", SafetySnapshot(er, v1alpha2.SnapshotLocation{})},
		{"RestoreVerifyPod(restore)", "Pod", RestoreVerifyPod(er, c, agentRestore, "agent")},
	}
}

// backupScheduleChildren are a backup schedule's runs and their agent Pods.
func backupScheduleChildren(name string) []derived {
	c := nameLimitCluster("etcd")
	bs := &v1alpha2.EtcdBackupSchedule{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "tenant"},
		Spec: v1alpha2.EtcdBackupScheduleSpec{ClusterRef: corev1.LocalObjectReference{Name: c.Name}}}
	run := ScheduledSnapshot(bs, lastScheduleMinute)
	return []derived{
		{"ScheduledSnapshot(backup schedule)", "EtcdSnapshot", run},
		{"SnapshotAgentPod(scheduled snapshot)", "Pod", SnapshotAgentPod(run, c, AgentSource{}, "agent")},
		{"SnapshotCleanupPod(scheduled snapshot)", "Pod", SnapshotCleanupPod(run, c, "agent")},
	}
}

// snapshotChildren are a snapshot's agent Pods.
func snapshotChildren(name string) []derived {
	c := nameLimitCluster("etcd")
	s := &v1alpha2.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "tenant"},
		Spec: v1alpha2.EtcdSnapshotSpec{ClusterRef: corev1.LocalObjectReference{Name: c.Name}}}
	return []derived{
		{"SnapshotAgentPod(snapshot)", "Pod", SnapshotAgentPod(s, c, AgentSource{}, "agent")},
		{"SnapshotCleanupPod(snapshot)", "Pod", SnapshotCleanupPod(s, c, "agent")},
	}
}

// defragScheduleChildren are a defrag schedule's runs.
func defragScheduleChildren(name string) []derived {
	ds := &v1alpha2.EtcdDefragSchedule{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "tenant"},
		Spec: v1alpha2.EtcdDefragScheduleSpec{ClusterRef: corev1.LocalObjectReference{Name: "etcd"}}}
	return []derived{{"ScheduledDefrag(defrag schedule)", "EtcdDefrag", ScheduledDefrag(ds, lastScheduleMinute)}}
}

// TestDerivedNamesFitTheirLimits derives every object the operator names after a parent (a
// cluster, a restore, a schedule, a snapshot) through the builders its controllers use, for
// every length of the parent's name its API admits (letters only, and with a dot when admitted),
// and checks each name (and label value) against its own kind's limit. A parent the API admits must never give a child the API
// refuses: then the API has to refuse the parent, or the child's name has to be shortened.
func TestDerivedNamesFitTheirLimits(t *testing.T) {
	parents := []struct {
		kind     string
		children func(name string) []derived
	}{
		{"EtcdCluster", clusterChildren},
		{"EtcdRestore", restoreChildren},
		{"EtcdBackupSchedule", backupScheduleChildren},
		{"EtcdSnapshot", snapshotChildren},
		{"EtcdDefragSchedule", defragScheduleChildren},
	}
	var tally namecheck.Tally
	for _, p := range parents {
		made := 0
		for l := 1; l <= longestAdmitted(p.kind); l++ {
			// Letters only, and with a dot where its API admits one (a DNS subdomain may have them).
			variants := [][2]string{{p.kind, "n" + strings.Repeat("x", l-1)}}
			if dotted := "n." + strings.Repeat("x", max(l-2, 0)); l >= 3 && len(namecheck.Name(p.kind, dotted)) == 0 {
				variants = append(variants, [2]string{p.kind + " (with a dot)", dotted})
			}
			seen := map[string]bool{} // what the dot adds, not what the length already breaks
			for _, v := range variants {
				for _, d := range p.children(v[1]) {
					made++
					for _, f := range namecheck.Object(d.where, d.kind, d.obj) {
						if key := f.Where + f.Kind + f.Field; !seen[key] {
							seen[key] = true
							tally.Add(v[0], l, f)
						}
					}
				}
			}
		}
		if made == 0 {
			t.Errorf("nothing derived from an %s", p.kind)
		}
	}
	if n := len(clusterChildren("etcd")); n < 17 {
		t.Errorf("a cluster gave %d objects; the three certificates are missing", n)
	}
	for _, line := range tally.Lines() {
		t.Error(line)
	}
}
