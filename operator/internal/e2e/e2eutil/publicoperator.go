//go:build e2e

package e2eutil

// The public cozystack/etcd-operator's (v1alpha2) part in the takeover e2e: clusters built
// exactly as that operator builds and leaves them, with no such operator running (the test plays
// it, as legacy.go plays the legacy operator). Facts from its reference
// (shared/reference/seed-operator-v1alpha2.md §1.2, §2.1–2.3, §2.8, §2.9, §2.11, §2.12): it
// shares this API group and version, so our operator meets its objects as they are, without a
// migration tool.
//
//   - EtcdCluster: its spec, and a status with the latched clusterID and clusterToken
//     (<ns>-<name>-<uid>) and the three conditions.
//   - Services <cluster> (headless, publishNotReadyAddresses, ports client and peer) and
//     <cluster>-client (ClusterIP, port client), selecting the cluster label, controlled by the
//     cluster; a PDB <cluster> over voters (minAvailable: quorum).
//   - One EtcdMember per member, named <cluster>-<random>, controlled by the cluster, with the
//     member-cleanup finalizer; spec copied from the cluster (bootstrap on the seed, the
//     initial cluster it started with, the token, the member TLS view); status memberID,
//     podName, podUID, pvcName, isVoter, replicas, selector, version, Ready.
//   - Its claim data-<member> and bare Pod <member> (hostname member, subdomain <cluster>),
//     both controlled by the member; etcd started with short .svc peer and client URLs.
//   - Members join one at a time: a single seed ("new"), then each learner added by
//     MemberAddAsLearner with the member list as its initial cluster ("existing"), promoted
//     once Ready.

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/etcd"
	"github.com/cozystack/etcd-operator/operator/internal/pki"
	"github.com/cozystack/etcd-operator/operator/internal/pki/pkitest"
)

// PublicTLS names the TLS Secrets a cluster of the public operator references (spec.tls by
// Secret reference, as Cozystack's etcd app renders it).
type PublicTLS struct{ Server, OperatorClient, Peer string }

// CozystackTLS creates the TLS Secrets of Cozystack's etcd app for a cluster named etcd: two RSA
// 4096 CAs (client plane, peer plane); etcd-server-tls and etcd-peer-tls for the DNS names etcd,
// etcd.<ns>.svc, *.etcd.<ns>.svc, *.etcd-headless.<ns>.svc, localhost and IP 127.0.0.1 (no
// name with the cluster domain), server and client auth; etcd-client-tls with CN root.
func CozystackTLS(t testing.TB, c *framework.Cluster, ns string) *PublicTLS {
	t.Helper()
	dns := []string{"etcd", "etcd." + ns + ".svc", "*.etcd." + ns + ".svc", "*.etcd-headless." + ns + ".svc", "localhost"}
	ips := []net.IP{pki.LoopbackIP}
	ca, peerCA := pkitest.NewRSACA(t, "etcd-ca", 4096), pkitest.NewRSACA(t, "etcd-peer-ca", 4096)
	s := &PublicTLS{Server: "etcd-server-tls", OperatorClient: "etcd-client-tls", Peer: "etcd-peer-tls"}
	CreateTLSSecret(t, c, ns, s.Server, ca.SecretData(t, dns, ips, pkitest.ServerAndClient...))
	CreateTLSSecret(t, c, ns, s.OperatorClient, ca.ClientSecretData(t, v1alpha2.RootUser))
	CreateTLSSecret(t, c, ns, s.Peer, peerCA.SecretData(t, dns, ips, pkitest.ServerAndClient...))
	return s
}

// PublicCluster is a cluster the test built as the public operator would have.
type PublicCluster struct {
	Namespace, Name string
	TLS             *PublicTLS
	// Client reaches every member by its client URL, as that operator dialled them.
	Client *clientv3.Client
	// IDs are etcd's member IDs by EtcdMember name.
	IDs map[string]uint64
}

// publicReadyTimeout bounds the wait for one member of a public-operator cluster to be Ready.
const publicReadyTimeout = 3 * time.Minute

// CreatePublicCluster builds a cluster of replicas members as the public operator does, member
// by member, and leaves its objects as that operator leaves a converged cluster.
func CreatePublicCluster(t testing.TB, c *framework.Cluster, ns, name string, replicas int, tls *PublicTLS) *PublicCluster {
	t.Helper()
	ec := createPublicEtcdCluster(t, c, ns, name, replicas, tls)
	pc := &PublicCluster{Namespace: ns, Name: name, TLS: tls, IDs: map[string]uint64{}}
	createPublicServices(t, c, ec)
	var members []*v1alpha2.EtcdMember
	for i := range replicas {
		m := pc.addMember(t, c, ec, members, i == 0)
		members = append(members, m)
	}
	createPublicPDB(t, c, ec, replicas)
	pc.setClusterStatus(t, c, ec, len(members))
	return pc
}

func createPublicEtcdCluster(t testing.TB, c *framework.Cluster, ns, name string, replicas int, tls *PublicTLS) *v1alpha2.EtcdCluster {
	t.Helper()
	ec := &v1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha2.EtcdClusterSpec{Replicas: ptr.To(int32(replicas)), Version: EtcdVersion(),
			Storage: v1alpha2.StorageSpec{Size: resource.MustParse("1Gi")}}}
	if tls != nil {
		ec.Spec.TLS = &v1alpha2.TLSSpec{
			Client: &v1alpha2.ClientTLS{ServerSecretRef: &corev1.LocalObjectReference{Name: tls.Server},
				OperatorClientSecretRef: &corev1.LocalObjectReference{Name: tls.OperatorClient}},
			Peer: &v1alpha2.PeerTLS{SecretRef: &corev1.LocalObjectReference{Name: tls.Peer}},
		}
	}
	if err := c.Client.Create(context.Background(), ec); err != nil {
		t.Fatal(err)
	}
	// The first reconcile latches the token, before any member exists.
	ec.Status.ClusterToken = fmt.Sprintf("%s-%s-%s", ns, name, ec.UID)
	if err := c.Client.Status().Update(context.Background(), ec); err != nil {
		t.Fatal(err)
	}
	return ec
}

// publicClusterLabels are the public operator's labels of every object of a cluster.
func publicClusterLabels(cluster string) map[string]string {
	return map[string]string{v1alpha2.LabelAppName: "etcd", v1alpha2.LabelAppInstance: cluster,
		v1alpha2.LabelAppManagedBy: "etcd-operator", v1alpha2.LabelCluster: cluster}
}

func publicMemberLabels(cluster, member string, voter bool) map[string]string {
	l := publicClusterLabels(cluster)
	l[v1alpha2.LabelAppComponent] = member
	if voter {
		l[v1alpha2.LabelRole] = "voter"
	}
	return l
}

// createOwned creates obj controlled by owner.
func createOwned(t testing.TB, c *framework.Cluster, owner, obj client.Object) {
	t.Helper()
	if err := controllerutil.SetControllerReference(owner, obj, Scheme); err != nil {
		t.Fatal(err)
	}
	if err := c.Client.Create(context.Background(), obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

func createPublicServices(t testing.TB, c *framework.Cluster, ec *v1alpha2.EtcdCluster) {
	t.Helper()
	sel := map[string]string{v1alpha2.LabelCluster: ec.Name}
	port := func(name string, p int32) corev1.ServicePort {
		return corev1.ServicePort{Name: name, Port: p, TargetPort: intstr.FromInt32(p)}
	}
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: ec.Namespace, Labels: publicClusterLabels(ec.Name)}
	}
	createOwned(t, c, ec, &corev1.Service{ObjectMeta: meta(ec.Name), Spec: corev1.ServiceSpec{
		ClusterIP: corev1.ClusterIPNone, PublishNotReadyAddresses: true, Selector: sel,
		Ports: []corev1.ServicePort{port("client", v1alpha2.ClientPort), port("peer", v1alpha2.PeerPort)}}})
	createOwned(t, c, ec, &corev1.Service{ObjectMeta: meta(ec.Name + "-client"), Spec: corev1.ServiceSpec{
		Selector: sel, Ports: []corev1.ServicePort{port("client", v1alpha2.ClientPort)}}})
}

func createPublicPDB(t testing.TB, c *framework.Cluster, ec *v1alpha2.EtcdCluster, voters int) {
	t.Helper()
	createOwned(t, c, ec, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: ec.Name, Namespace: ec.Namespace, Labels: publicClusterLabels(ec.Name)},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt(voters/2 + 1)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{v1alpha2.LabelCluster: ec.Name, v1alpha2.LabelRole: "voter"}}}})
}

// schemes are the public operator's URL schemes of the cluster's client and peer planes.
func (pc *PublicCluster) schemes() (client, peer string) {
	if pc.TLS == nil {
		return "http", "http"
	}
	return "https", "https"
}

func (pc *PublicCluster) host(member string) string {
	return v1alpha2.MemberHost(member, pc.Name, pc.Namespace)
}

// addMember creates the next member as the public operator does: its EtcdMember, then (for a
// joiner) MemberAddAsLearner and the initial cluster from etcd's member list, then its claim and
// Pod; once the Pod is Ready a learner is promoted. It returns the member as stored.
func (pc *PublicCluster) addMember(t testing.TB, c *framework.Cluster, ec *v1alpha2.EtcdCluster, before []*v1alpha2.EtcdMember, seed bool) *v1alpha2.EtcdMember {
	t.Helper()
	ctx := context.Background()
	m := pc.newMember(ec, seed)
	createOwned(t, c, ec, m)
	_, peerScheme := pc.schemes()
	peerURL := fmt.Sprintf("%s://%s:%d", peerScheme, pc.host(m.Name), v1alpha2.PeerPort)
	initial := m.Name + "=" + peerURL
	var learnerID uint64
	if !seed {
		// etcd refuses a membership change until every voter has been connected for 5 s
		// ("unhealthy cluster"); the public operator retries on its next pass.
		var added *clientv3.MemberAddResponse
		WaitNoError(t, time.Minute, "MemberAddAsLearner "+m.Name, func() error {
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			var err error
			added, err = pc.Client.MemberAddAsLearner(cctx, []string{peerURL})
			return err
		})
		learnerID = added.Member.ID
		var entries []string
		for _, e := range added.Members {
			name := e.Name
			if e.ID == learnerID {
				name = m.Name
			}
			for _, u := range e.PeerURLs {
				entries = append(entries, name+"="+u)
			}
		}
		slices.Sort(entries)
		initial = strings.Join(entries, ",")
	}
	patch := client.MergeFrom(m.DeepCopy())
	m.Spec.InitialCluster = initial
	m.Labels[v1alpha2.LabelAppComponent] = m.Name
	if err := c.Client.Patch(ctx, m, patch); err != nil {
		t.Fatal(err)
	}
	pvc := pc.claim(m)
	createOwned(t, c, m, pvc)
	pod := pc.pod(m, seed)
	createOwned(t, c, m, pod)
	WaitFor(t, publicReadyTimeout, "Pod "+m.Name+" Ready", func() bool {
		p := Pod(t, c, pc.Namespace, m.Name)
		return p != nil && PodReady(p)
	})
	if seed {
		pc.Client = pc.dial(t, c, m.Name)
		pc.IDs[m.Name] = pc.seedID(t)
	} else {
		pc.promote(t, learnerID)
		pc.IDs[m.Name] = learnerID
		pc.Client.SetEndpoints(pc.endpoints(append(before, m))...)
		p := Pod(t, c, pc.Namespace, m.Name)
		podPatch := client.MergeFrom(p.DeepCopy())
		p.Labels[v1alpha2.LabelRole] = "voter"
		if err := c.Client.Patch(ctx, p, podPatch); err != nil {
			t.Fatal(err)
		}
	}
	pc.setMemberStatus(t, c, m, Pod(t, c, pc.Namespace, m.Name))
	return m
}

func (pc *PublicCluster) newMember(ec *v1alpha2.EtcdCluster, seed bool) *v1alpha2.EtcdMember {
	m := &v1alpha2.EtcdMember{
		ObjectMeta: metav1.ObjectMeta{GenerateName: ec.Name + "-", Namespace: ec.Namespace,
			Labels: publicClusterLabels(ec.Name), Finalizers: []string{v1alpha2.MemberCleanupFinalizer}},
		Spec: v1alpha2.EtcdMemberSpec{ClusterName: ec.Name, Version: ec.Spec.Version, Storage: ec.Spec.Storage,
			Bootstrap: seed, ClusterToken: ec.Status.ClusterToken, Replicas: ptr.To(int32(1))},
	}
	if pc.TLS != nil {
		m.Spec.TLS = &v1alpha2.MemberTLS{ClientServerSecretRef: &corev1.LocalObjectReference{Name: pc.TLS.Server},
			ClientMTLS: true, PeerSecretRef: &corev1.LocalObjectReference{Name: pc.TLS.Peer}}
	}
	return m
}

func (pc *PublicCluster) claim(m *v1alpha2.EtcdMember) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: v1alpha2.PVCName(m.Name), Namespace: m.Namespace, Labels: publicMemberLabels(pc.Name, m.Name, false)},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: m.Spec.Storage.Size}}},
	}
}

// pod is the public operator's member Pod (its buildPod, §2.12): the seed of a cluster not
// formed yet starts "new", every other member "existing".
func (pc *PublicCluster) pod(m *v1alpha2.EtcdMember, seed bool) *corev1.Pod {
	clientScheme, peerScheme := pc.schemes()
	state := "existing"
	if seed {
		state = "new"
	}
	cmd := []string{"etcd", "--name=" + m.Name, "--data-dir=/var/lib/etcd",
		"--listen-peer-urls=" + peerScheme + "://0.0.0.0:2380", "--listen-client-urls=" + clientScheme + "://0.0.0.0:2379",
		fmt.Sprintf("--advertise-client-urls=%s://%s:%d", clientScheme, pc.host(m.Name), v1alpha2.ClientPort),
		fmt.Sprintf("--initial-advertise-peer-urls=%s://%s:%d", peerScheme, pc.host(m.Name), v1alpha2.PeerPort),
		"--initial-cluster=" + m.Spec.InitialCluster, "--initial-cluster-token=" + m.Spec.ClusterToken,
		"--initial-cluster-state=" + state, "--listen-metrics-urls=http://0.0.0.0:2381"}
	volumes := []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: v1alpha2.PVCName(m.Name)}}}}
	mounts := []corev1.VolumeMount{{Name: "data", MountPath: "/var/lib/etcd"}}
	if pc.TLS != nil {
		cmd = append(cmd, "--cert-file=/etc/etcd/tls/client/tls.crt", "--key-file=/etc/etcd/tls/client/tls.key",
			"--client-cert-auth=true", "--trusted-ca-file=/etc/etcd/tls/client/ca.crt",
			"--peer-cert-file=/etc/etcd/tls/peer/tls.crt", "--peer-key-file=/etc/etcd/tls/peer/tls.key",
			"--peer-trusted-ca-file=/etc/etcd/tls/peer/ca.crt", "--peer-client-cert-auth=true")
		volumes = append(volumes,
			corev1.Volume{Name: "tls-client", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: pc.TLS.Server}}},
			corev1.Volume{Name: "tls-peer", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: pc.TLS.Peer}}})
		mounts = append(mounts, corev1.VolumeMount{Name: "tls-client", MountPath: "/etc/etcd/tls/client", ReadOnly: true},
			corev1.VolumeMount{Name: "tls-peer", MountPath: "/etc/etcd/tls/peer", ReadOnly: true})
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, Labels: publicMemberLabels(pc.Name, m.Name, seed)},
		Spec: corev1.PodSpec{
			Hostname: m.Name, Subdomain: pc.Name, AutomountServiceAccountToken: ptr.To(false),
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To(int64(65532)),
				RunAsGroup: ptr.To(int64(65532)), FSGroup: ptr.To(int64(65532)),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{
				Name: "etcd", Image: v1alpha2.DefaultImageRepository + ":v" + m.Spec.Version, Command: cmd,
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
				Ports: []corev1.ContainerPort{{Name: "client", ContainerPort: 2379}, {Name: "peer", ContainerPort: 2380},
					{Name: "metrics", ContainerPort: 2381}},
				VolumeMounts: mounts,
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")}},
				LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt(2380)}},
					InitialDelaySeconds: 15, PeriodSeconds: 10, FailureThreshold: 3},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromInt(2381)}},
					InitialDelaySeconds: 5, PeriodSeconds: 5, FailureThreshold: 3},
			}},
			Volumes: volumes,
		},
	}
}

// dial is the public operator's client of the cluster: its members' client URLs, with the
// server Secret's CA and the operator-client certificate.
func (pc *PublicCluster) dial(t testing.TB, c *framework.Cluster, members ...string) *clientv3.Client {
	t.Helper()
	clientScheme, _ := pc.schemes()
	var eps []string
	for _, m := range members {
		eps = append(eps, fmt.Sprintf("%s://%s:%d", clientScheme, pc.host(m), v1alpha2.ClientPort))
	}
	cfg := ClientConfig(c, eps...)
	if pc.TLS != nil {
		cfg.TLS = TLSConfig(t, c, pc.Namespace, pc.TLS.Server, pc.TLS.OperatorClient)
	}
	cli, err := clientv3.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

func (pc *PublicCluster) endpoints(members []*v1alpha2.EtcdMember) []string {
	clientScheme, _ := pc.schemes()
	var eps []string
	for _, m := range members {
		eps = append(eps, fmt.Sprintf("%s://%s:%d", clientScheme, pc.host(m.Name), v1alpha2.ClientPort))
	}
	return eps
}

// seedID is the one member of the freshly formed cluster (the public operator latches the
// cluster ID only on exactly one member).
func (pc *PublicCluster) seedID(t testing.TB) uint64 {
	t.Helper()
	var id uint64
	WaitNoError(t, time.Minute, "the seed's member list", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := pc.Client.MemberList(ctx)
		if err != nil {
			return err
		}
		if len(resp.Members) != 1 {
			return fmt.Errorf("%d members", len(resp.Members))
		}
		id = resp.Members[0].ID
		return nil
	})
	return id
}

// promote retries MemberPromote while etcd says the learner is not in sync yet.
func (pc *PublicCluster) promote(t testing.TB, id uint64) {
	t.Helper()
	WaitNoError(t, time.Minute, fmt.Sprintf("promotion of %x", id), func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := pc.Client.MemberPromote(ctx, id)
		return err
	})
}

func (pc *PublicCluster) setMemberStatus(t testing.TB, c *framework.Cluster, m *v1alpha2.EtcdMember, pod *corev1.Pod) {
	t.Helper()
	now := metav1.Now()
	m.Status = v1alpha2.EtcdMemberStatus{
		MemberID: etcd.FormatID(pc.IDs[m.Name]), PodName: pod.Name, PodUID: string(pod.UID), IsVoter: true, Replicas: 1,
		Selector: v1alpha2.LabelCluster + "=" + pc.Name + "," + v1alpha2.LabelAppComponent + "=" + m.Name,
		PVCName:  v1alpha2.PVCName(m.Name), Version: m.Spec.Version,
		Conditions: []metav1.Condition{{Type: v1alpha2.ConditionReady, Status: metav1.ConditionTrue, Reason: v1alpha2.ReasonPodReady,
			Message: "pod is ready", LastTransitionTime: now, ObservedGeneration: m.Generation}},
	}
	if err := c.Client.Status().Update(context.Background(), m); err != nil {
		t.Fatalf("status of EtcdMember %s: %v", m.Name, err)
	}
}

// setClusterStatus writes the status of a converged cluster: the latched cluster ID, the ready
// count, the /scale selector and the three conditions.
func (pc *PublicCluster) setClusterStatus(t testing.TB, c *framework.Cluster, ec *v1alpha2.EtcdCluster, ready int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := pc.Client.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Client.Get(ctx, client.ObjectKeyFromObject(ec), ec); err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	cond := func(typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: "all members ready",
			LastTransitionTime: now, ObservedGeneration: ec.Generation}
	}
	ec.Status.ReadyMembers = int32(ready)
	ec.Status.Selector = v1alpha2.LabelCluster + "=" + ec.Name
	ec.Status.ClusterID = etcd.FormatID(resp.Header.ClusterId)
	ec.Status.Conditions = []metav1.Condition{
		cond(v1alpha2.ConditionAvailable, metav1.ConditionTrue, v1alpha2.ReasonQuorumHealthy),
		cond(v1alpha2.ConditionProgressing, metav1.ConditionFalse, v1alpha2.ReasonReconciled),
		cond(v1alpha2.ConditionDegraded, metav1.ConditionFalse, v1alpha2.ReasonQuorumHealthy),
	}
	if err := c.Client.Status().Update(ctx, ec); err != nil {
		t.Fatalf("status of EtcdCluster %s: %v", ec.Name, err)
	}
}
