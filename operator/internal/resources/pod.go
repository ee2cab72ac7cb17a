package resources

import (
	"fmt"
	"maps"
	"reflect"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

const (
	// DataDir is where the data volume is mounted; etcd keeps its data there (MemberDataDir).
	DataDir      = "/var/lib/etcd"
	clientTLSDir = "/etc/etcd/tls/client"
	peerTLSDir   = "/etc/etcd/tls/peer"
	trustDir     = "/etc/etcd/tls/trust"
	// TrustKeyClientCA and TrustKeyPeerCA are the keys of a trust bundle ConfigMap.
	TrustKeyClientCA = "client-ca.crt"
	TrustKeyPeerCA   = "peer-ca.crt"
	// TrustVolume is the member Pod's volume of its trust bundle ConfigMap.
	TrustVolume   = "tls-trust"
	containerName = "etcd"
	nonRootID     = 65532
	// HostnameTopologyKey spreads members over nodes by default.
	HostnameTopologyKey = "kubernetes.io/hostname"
	// terminationGracePeriod leaves etcd time to step down as leader and flush, without
	// holding a replacement back for the Kubernetes default of 30 s plus kill.
	terminationGracePeriod = 30
)

// PodOptions are the operator-wide and cluster-phase inputs of a member Pod.
type PodOptions struct {
	// ImageRepository is the operator default (--etcd-image-repository).
	ImageRepository string
	// ClusterFormed is true once the cluster's ID has been latched.
	ClusterFormed bool
	// AgentImage is the operator's own image, whose binary restores a seed's data dir.
	AgentImage string
	// Steady builds the Pod without what only its first start needs (the restore of a seed, the
	// forcing of a new cluster). Its revision is the Pod's revision: those parts run once, and a
	// Pod built later (when they are done) must not count as another template.
	Steady bool
}

// InitialClusterState is "new" only for a seed that has never run in a cluster that never
// formed. A seed whose data dir is wiped later must fail loudly, not re-bootstrap empty.
func InitialClusterState(m *v1alpha2.EtcdMember, clusterFormed bool) string {
	if m.Spec.Bootstrap && m.Status.MemberID == "" && !clusterFormed {
		return "new"
	}
	return "existing"
}

// StartAnnotations are the Pod annotations etcd and the data guard read at each container
// start (downward API env): they change under a running Pod without changing its template.
func StartAnnotations(m *v1alpha2.EtcdMember, clusterFormed bool) map[string]string {
	a := map[string]string{
		v1alpha2.AnnotationInitialClusterState: InitialClusterState(m, clusterFormed),
		v1alpha2.AnnotationForceNewCluster:     strconv.FormatBool(m.Spec.ForceNewCluster),
	}
	maps.Copy(a, dataGuardAnnotations(m))
	return a
}

// Image is <repository>:v<version>; the member's repository wins over the operator default.
func Image(m *v1alpha2.EtcdMember, defaultRepo string) string {
	repo := m.Spec.ImageRepository
	if repo == "" {
		repo = defaultRepo
	}
	if repo == "" {
		repo = v1alpha2.DefaultImageRepository
	}
	return fmt.Sprintf("%s:v%s", repo, m.Spec.Version)
}

// Pod builds a member's Pod. Its name is the member's, so a replacement Pod keeps the DNS name.
func Pod(m *v1alpha2.EtcdMember, opts PodOptions) *corev1.Pod {
	meta := memberObjectMeta(m, m.Name)
	meta.Annotations = MergeMetadata(meta.Annotations, StartAnnotations(m, opts.ClusterFormed))
	pod := &corev1.Pod{
		ObjectMeta: meta,
		Spec: corev1.PodSpec{
			Hostname:                      m.Name,
			Subdomain:                     v1alpha2.HeadlessServiceName(m.Spec.ClusterName, m.Spec.Layout),
			AutomountServiceAccountToken:  ptr.To(false),
			EnableServiceLinks:            ptr.To(false),
			TerminationGracePeriodSeconds: ptr.To[int64](terminationGracePeriod),
			SecurityContext:               podSecurityContext(),
			Containers:                    []corev1.Container{etcdContainer(m, opts)},
			Volumes:                       volumes(m),
			Affinity:                      affinity(m),
			TopologySpreadConstraints:     m.Spec.TopologySpreadConstraints,
			NodeSelector:                  m.Spec.NodeSelector,
			Tolerations:                   m.Spec.Tolerations,
			PriorityClassName:             m.Spec.PriorityClassName,
			ImagePullSecrets:              m.Spec.ImagePullSecrets,
		},
	}
	if guardsData(m) && opts.AgentImage != "" { // the guard is the operator's binary
		pod.Spec.InitContainers = []corev1.Container{dataGuardInitContainer(m, opts)}
	}
	if restoring(m, opts) {
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, restoreInitContainers(m, opts)...)
		pod.Spec.Volumes = append(pod.Spec.Volumes, restoreVolumes(m)...)
	}
	if presentsPeerCertificate(m) {
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, peerFixturesInitContainer(m, opts))
	}
	return pod
}

// agentResources are the requests (and memory limit) of the agent containers: they stream, so
// their memory does not grow with the database.
func agentResources() corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
	}
}

func etcdContainer(m *v1alpha2.EtcdMember, opts PodOptions) corev1.Container {
	return corev1.Container{
		Name:    containerName,
		Image:   Image(m, opts.ImageRepository),
		Command: append([]string{"etcd"}, EtcdFlags(m)...),
		Env:     startEnv(m, opts),
		Ports: []corev1.ContainerPort{
			{Name: "client", ContainerPort: v1alpha2.ClientPort, Protocol: corev1.ProtocolTCP},
			{Name: "peer", ContainerPort: v1alpha2.PeerPort, Protocol: corev1.ProtocolTCP},
			{Name: "metrics", ContainerPort: v1alpha2.MetricsPort, Protocol: corev1.ProtocolTCP},
		},
		Resources:       resources(m.Spec.Resources),
		VolumeMounts:    volumeMounts(m),
		StartupProbe:    startupProbe(),
		LivenessProbe:   livenessProbe(),
		ReadinessProbe:  readinessProbe(m.Spec.Version),
		SecurityContext: containerSecurityContext(),
	}
}

// EtcdFlags are the etcd command-line flags of a member, in a stable order.
// The initial cluster state is not a flag: it comes from the Pod annotation (see
// AnnotationInitialClusterState), which can change under a running Pod.
func EtcdFlags(m *v1alpha2.EtcdMember) []string {
	ps := peerScheme(m.Spec.TLS)
	flags := []string{
		"--name=" + m.Name,
		"--data-dir=" + MemberDataDir(m),
		fmt.Sprintf("--listen-peer-urls=%s://0.0.0.0:%d", ps, v1alpha2.PeerPort),
		"--listen-client-urls=" + listenClientURLs(m.Spec.TLS),
		"--advertise-client-urls=" + ClientURL(m),
		"--initial-advertise-peer-urls=" + PeerURL(m),
		"--initial-cluster=" + m.Spec.InitialCluster,
		"--initial-cluster-token=" + m.Spec.ClusterToken,
		fmt.Sprintf("--listen-metrics-urls=http://0.0.0.0:%d", v1alpha2.MetricsPort),
	}
	flags = append(flags, optionFlags(m.Spec.Options)...)
	return append(flags, tlsFlags(m.Spec.TLS)...)
}

// listenClientURLs is the client listener: one scheme, or while client TLS is being added to
// a running cluster both on the same port (etcd tells them apart per connection), so that
// clients not yet on TLS keep working. The advertised URL is https then already.
func listenClientURLs(t *v1alpha2.MemberTLS) string {
	if t != nil && t.ClientServerSecretRef != nil && t.ClientPlaintext {
		return fmt.Sprintf("http://0.0.0.0:%d,https://0.0.0.0:%d", v1alpha2.ClientPort, v1alpha2.ClientPort)
	}
	return fmt.Sprintf("%s://0.0.0.0:%d", clientScheme(t), v1alpha2.ClientPort)
}

// startEnv: ETCD_INITIAL_CLUSTER_STATE always; ETCD_FORCE_NEW_CLUSTER on a Pod built for a
// quorum-loss rebuild only (not in the revision: the Pod stays current once the flag is
// cleared, and its annotation then says "false" to any later container start). A tmpfs member
// has it always: its Pod cannot be rebuilt to add it without losing the data, so a rebuild
// restarts only its etcd container (ForcesInPlace).
func startEnv(m *v1alpha2.EtcdMember, opts PodOptions) []corev1.EnvVar {
	env := []corev1.EnvVar{annotationEnv("ETCD_INITIAL_CLUSTER_STATE", v1alpha2.AnnotationInitialClusterState)}
	if ForcesInPlace(m) || (m.Spec.ForceNewCluster && !opts.Steady) {
		env = append(env, annotationEnv("ETCD_FORCE_NEW_CLUSTER", v1alpha2.AnnotationForceNewCluster))
	}
	return env
}

// annotationEnv is env var name read from a Pod annotation, resolved at each container start.
func annotationEnv(name, annotation string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
		APIVersion: "v1", FieldPath: fmt.Sprintf("metadata.annotations['%s']", annotation)}}}
}

func optionFlags(o *v1alpha2.EtcdOptions) []string {
	if o == nil {
		return nil
	}
	var flags []string
	if o.QuotaBackendBytes != nil {
		flags = append(flags, fmt.Sprintf("--quota-backend-bytes=%d", *o.QuotaBackendBytes))
	}
	if o.AutoCompactionMode != "" {
		flags = append(flags, "--auto-compaction-mode="+o.AutoCompactionMode)
	}
	if o.AutoCompactionRetention != "" {
		flags = append(flags, "--auto-compaction-retention="+o.AutoCompactionRetention)
	}
	if o.SnapshotCount != nil {
		flags = append(flags, fmt.Sprintf("--snapshot-count=%d", *o.SnapshotCount))
	}
	return flags
}

func tlsFlags(t *v1alpha2.MemberTLS) []string {
	if t == nil {
		return nil
	}
	// The CAs come from the trust bundle: etcd reads them once, so they change only with the Pod.
	clientCA, peerCA := trustDir+"/"+TrustKeyClientCA, trustDir+"/"+TrustKeyPeerCA
	if t.TrustBundle == "" { // a member made before trust bundles existed, until it is rolled
		clientCA, peerCA = clientTLSDir+"/ca.crt", peerTLSDir+"/ca.crt"
	}
	var flags []string
	if t.ClientServerSecretRef != nil {
		flags = append(flags, "--cert-file="+clientTLSDir+"/tls.crt", "--key-file="+clientTLSDir+"/tls.key")
		if t.ClientMTLS {
			flags = append(flags, "--client-cert-auth=true", "--trusted-ca-file="+clientCA)
		}
	}
	switch {
	case t.PeerAutoTLS: // with PeerSecretRef too: auto-TLS presenting the plane's certificate
		flags = append(flags, "--peer-auto-tls")
	case t.PeerSecretRef != nil:
		flags = append(flags, "--peer-cert-file="+peerTLSDir+"/tls.crt", "--peer-key-file="+peerTLSDir+"/tls.key",
			"--peer-trusted-ca-file="+peerCA, "--peer-client-cert-auth=true")
	}
	return flags
}

// resources defaults the requests when the user set nothing at all.
func resources(r corev1.ResourceRequirements) corev1.ResourceRequirements {
	if !reflect.DeepEqual(r, corev1.ResourceRequirements{}) {
		return r
	}
	return corev1.ResourceRequirements{Requests: corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("100m"),
		corev1.ResourceMemory: resource.MustParse("128Mi"),
	}}
}

// readinessProbe is quorum-aware: /readyz on etcd 3.6+ (without its non_learner check, so a
// caught-up learner is Ready and can be promoted), /health before.
func readinessProbe(version string) *corev1.Probe {
	path := "/readyz?exclude=non_learner"
	if strings.HasPrefix(version, "3.5.") || strings.HasPrefix(version, "3.4.") {
		path = "/health"
	}
	return &corev1.Probe{
		ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: path, Port: intstr.FromInt32(v1alpha2.MetricsPort), Scheme: corev1.URISchemeHTTP,
		}},
		PeriodSeconds: readinessPeriod, TimeoutSeconds: 3, FailureThreshold: 3,
	}
}

// readinessPeriod is short because readiness gates every membership step and the
// Available condition: a member that just joined should count within seconds.
const readinessPeriod = 2

// livenessProbe is deliberately not quorum-aware: a member must not be restarted because its
// peers are down.
func livenessProbe() *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(v1alpha2.PeerPort)}},
		PeriodSeconds: 10, TimeoutSeconds: 3, FailureThreshold: 3,
	}
}

// startupProbe gives a joining member (which may be replaying a large snapshot) five minutes
// before liveness applies. It probes every second: etcd listens within a second of starting,
// and readiness (which gates each next membership step) is not probed before this succeeds.
func startupProbe() *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(v1alpha2.PeerPort)}},
		PeriodSeconds: 1, TimeoutSeconds: 1, FailureThreshold: 300,
	}
}

func podSecurityContext() *corev1.PodSecurityContext {
	return &corev1.PodSecurityContext{
		RunAsNonRoot:   ptr.To(true),
		RunAsUser:      ptr.To[int64](nonRootID),
		RunAsGroup:     ptr.To[int64](nonRootID),
		FSGroup:        ptr.To[int64](nonRootID),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

func containerSecurityContext() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

// affinity is the user's, or a soft anti-affinity that spreads a cluster's members over nodes.
func affinity(m *v1alpha2.EtcdMember) *corev1.Affinity {
	if m.Spec.Affinity != nil {
		return m.Spec.Affinity
	}
	return &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
			Weight: 100,
			PodAffinityTerm: corev1.PodAffinityTerm{
				LabelSelector: &metav1.LabelSelector{MatchLabels: ClusterSelector(m.Spec.ClusterName)},
				TopologyKey:   HostnameTopologyKey,
			},
		}},
	}}
}

func volumes(m *v1alpha2.EtcdMember) []corev1.Volume {
	vols := []corev1.Volume{{Name: "data", VolumeSource: dataVolumeSource(m)}}
	if t := m.Spec.TLS; t != nil && t.ClientServerSecretRef != nil {
		vols = append(vols, secretVolume("tls-client", t.ClientServerSecretRef.Name))
	}
	if t := m.Spec.TLS; t != nil && t.PeerSecretRef != nil {
		vols = append(vols, secretVolume("tls-peer", t.PeerSecretRef.Name))
	}
	if t := m.Spec.TLS; t != nil && t.TrustBundle != "" {
		vols = append(vols, corev1.Volume{Name: TrustVolume, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: t.TrustBundle}, DefaultMode: ptr.To[int32](0o444),
		}}})
	}
	return vols
}

func dataVolumeSource(m *v1alpha2.EtcdMember) corev1.VolumeSource {
	if m.Spec.Storage.Medium == v1alpha2.StorageMediumMemory {
		size := m.Spec.Storage.Size
		return corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: &size}}
	}
	return corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: v1alpha2.PVCName(m.Name)}}
}

func secretVolume(name, secret string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: secret, DefaultMode: ptr.To[int32](0o440),
	}}}
}

func volumeMounts(m *v1alpha2.EtcdMember) []corev1.VolumeMount {
	mounts := []corev1.VolumeMount{{Name: "data", MountPath: DataDir}}
	if t := m.Spec.TLS; t != nil && t.ClientServerSecretRef != nil {
		mounts = append(mounts, corev1.VolumeMount{Name: "tls-client", MountPath: clientTLSDir, ReadOnly: true})
	}
	if t := m.Spec.TLS; t != nil && t.PeerSecretRef != nil {
		mounts = append(mounts, corev1.VolumeMount{Name: "tls-peer", MountPath: peerTLSDir, ReadOnly: true})
	}
	if t := m.Spec.TLS; t != nil && t.TrustBundle != "" {
		mounts = append(mounts, corev1.VolumeMount{Name: TrustVolume, MountPath: trustDir, ReadOnly: true})
	}
	return mounts
}

// MemberDataDir is etcd's --data-dir: the volume's root, or the sub-directory an adopted
// cluster's data was written to.
func MemberDataDir(m *v1alpha2.EtcdMember) string {
	if l := m.Spec.Layout; l != nil && l.DataDirSubPath != "" {
		return DataDir + "/" + l.DataDirSubPath
	}
	return DataDir
}
