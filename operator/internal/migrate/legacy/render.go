package legacy

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/utils/ptr"
)

// The builders below return what the legacy operator sends to the API for a cluster, before
// the API server's defaulting. They read c as it is stored: run Default first on a cluster that
// did not pass the legacy webhook. None of them modifies c.

// Flags the legacy operator always passes, and the share of the volume it gives the backend.
const (
	AutoCompactionRetention = "5m"
	SnapshotCount           = 10000
	// QuotaFraction of the volume size becomes --quota-backend-bytes unless options set it.
	QuotaFraction = 0.95
	// QuotaOption is the option key that overrides the injected quota.
	QuotaOption = "quota-backend-bytes"
)

// Mount paths of the TLS Secrets in the etcd container.
const (
	PeerCAMountPath     = "/etc/etcd/pki/peer/ca"
	PeerCertMountPath   = "/etc/etcd/pki/peer/cert"
	ServerCertMountPath = "/etc/etcd/pki/server/cert"
	ClientCAMountPath   = "/etc/etcd/pki/client/ca"
)

// OwnerReference is the controller reference the legacy operator puts on every object it
// creates, so deleting the EtcdCluster cascades to them (not to the PVCs).
func OwnerReference(c *EtcdCluster) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: GroupVersion.String(), Kind: GroupVersionKind.Kind, Name: c.Name, UID: c.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}
}

func ownedMeta(c *EtcdCluster, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: c.Namespace, OwnerReferences: []metav1.OwnerReference{OwnerReference(c)}}
}

// StatefulSet is the members' StatefulSet. It fails only when podTemplate.spec cannot be
// merged, which the legacy operator reports as a reconcile error too.
func StatefulSet(c *EtcdCluster) (*appsv1.StatefulSet, error) {
	template, err := podTemplate(c)
	if err != nil {
		return nil, err
	}
	return &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: ownedMeta(c, StatefulSetName(c)),
		Spec: appsv1.StatefulSetSpec{
			Replicas:             ptr.To(Replicas(c)),
			ServiceName:          HeadlessServiceName(c),
			PodManagementPolicy:  appsv1.ParallelPodManagement,
			Selector:             &metav1.LabelSelector{MatchLabels: Labels(c)},
			Template:             template,
			VolumeClaimTemplates: claimTemplates(c),
		},
	}, nil
}

// podTemplate is the generated pod template with podTemplate's labels, annotations and spec
// applied; the spec is a strategic merge, so containers merge by name.
func podTemplate(c *EtcdCluster) (corev1.PodTemplateSpec, error) {
	labels := Labels(c)
	// User labels win, even over the selector labels (which then breaks the StatefulSet).
	maps.Copy(labels, c.Spec.PodTemplate.Labels)
	base := corev1.PodSpec{Containers: []corev1.Container{etcdContainer(c)}, Volumes: volumes(c)}
	patch := c.Spec.PodTemplate.Spec
	if patch.Containers == nil {
		// PodSpec's containers has no omitempty: null in the patch would delete ours.
		patch.Containers = []corev1.Container{}
	}
	spec, err := strategicMerge(base, patch)
	if err != nil {
		return corev1.PodTemplateSpec{}, fmt.Errorf("merging podTemplate.spec of %s/%s: %w", c.Namespace, c.Name, err)
	}
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: maps.Clone(c.Spec.PodTemplate.Annotations)},
		Spec:       spec,
	}, nil
}

func etcdContainer(c *EtcdCluster) corev1.Container {
	return corev1.Container{
		Name:    EtcdContainerName,
		Image:   DefaultImage,
		Command: []string{"etcd"},
		Args:    Args(c),
		Ports: []corev1.ContainerPort{
			{Name: "peer", ContainerPort: PeerPort},
			{Name: "client", ContainerPort: ClientPort},
		},
		EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: ConfigMapName(c)},
		}}},
		Env: []corev1.EnvVar{
			{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
		},
		StartupProbe:   metricsProbe("/readyz?serializable=false"),
		LivenessProbe:  metricsProbe("/livez"),
		ReadinessProbe: metricsProbe("/readyz"),
		VolumeMounts:   volumeMounts(c),
	}
}

// metricsProbe checks the plain-http metrics listener, which needs no client certificate.
func metricsProbe(path string) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt32(MetricsPort)}},
		PeriodSeconds: 5,
	}
}

// tlsVolume is one Secret volume of the etcd container.
type tlsVolume struct{ name, secret, mountPath string }

// tlsVolumes are the Secret volumes in the legacy order. The server CA and the client
// certificate are not mounted: only the operator's own client uses them.
func tlsVolumes(c *EtcdCluster) []tlsVolume {
	t := tlsSpec(c)
	var vs []tlsVolume
	if !PeerAutoTLS(c) {
		vs = append(vs,
			tlsVolume{"peer-trusted-ca-certificate", t.PeerTrustedCASecret, PeerCAMountPath},
			tlsVolume{"peer-certificate", t.PeerSecret, PeerCertMountPath})
	}
	if ServerTLS(c) {
		vs = append(vs, tlsVolume{"server-certificate", t.ServerSecret, ServerCertMountPath})
	}
	if ClientCertAuth(c) {
		vs = append(vs, tlsVolume{"client-trusted-ca-certificate", t.ClientTrustedCASecret, ClientCAMountPath})
	}
	return vs
}

func volumes(c *EtcdCluster) []corev1.Volume {
	data := corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: ClaimTemplateName(c)}}
	if c.Spec.Storage.EmptyDir != nil {
		data = corev1.VolumeSource{EmptyDir: c.Spec.Storage.EmptyDir.DeepCopy()}
	}
	vs := []corev1.Volume{{Name: DataVolumeName, VolumeSource: data}}
	for _, v := range tlsVolumes(c) {
		vs = append(vs, corev1.Volume{Name: v.name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: v.secret}}})
	}
	return vs
}

func volumeMounts(c *EtcdCluster) []corev1.VolumeMount {
	ms := []corev1.VolumeMount{{Name: DataVolumeName, MountPath: DataMountPath}}
	for _, v := range tlsVolumes(c) {
		ms = append(ms, corev1.VolumeMount{Name: v.name, ReadOnly: true, MountPath: v.mountPath})
	}
	return ms
}

// claimTemplates is the single claim template, or none with emptyDir (which wins).
func claimTemplates(c *EtcdCluster) []corev1.PersistentVolumeClaim {
	if c.Spec.Storage.EmptyDir != nil {
		return nil
	}
	t := c.Spec.Storage.VolumeClaimTemplate
	return []corev1.PersistentVolumeClaim{{
		ObjectMeta: metav1.ObjectMeta{Name: ClaimTemplateName(c), Labels: maps.Clone(t.Labels), Annotations: maps.Clone(t.Annotations)},
		Spec:       *t.Spec.DeepCopy(),
		Status:     *t.Status.DeepCopy(),
	}}
}

// Args are the etcd container's arguments in the legacy order: fixed flags, TLS flags, the
// implicit compaction and snapshot settings, then the sorted options.
func Args(c *EtcdCluster) []string {
	scheme, headless := clientScheme(c), HeadlessServiceName(c)
	args := []string{
		"--name=$(POD_NAME)",
		fmt.Sprintf("--listen-metrics-urls=http://0.0.0.0:%d", MetricsPort),
		fmt.Sprintf("--listen-peer-urls=https://0.0.0.0:%d", PeerPort),
		fmt.Sprintf("--listen-client-urls=%s0.0.0.0:%d", scheme, ClientPort),
		fmt.Sprintf("--initial-advertise-peer-urls=https://$(POD_NAME).%s.$(POD_NAMESPACE).svc:%d", headless, PeerPort),
		"--data-dir=" + DataDir,
		fmt.Sprintf("--advertise-client-urls=%s$(POD_NAME).%s.$(POD_NAMESPACE).svc:%d", scheme, headless, ClientPort),
	}
	if PeerAutoTLS(c) {
		args = append(args, "--peer-auto-tls")
	} else {
		args = append(args,
			"--peer-trusted-ca-file="+PeerCAMountPath+"/ca.crt",
			"--peer-cert-file="+PeerCertMountPath+"/tls.crt",
			"--peer-key-file="+PeerCertMountPath+"/tls.key",
			"--peer-client-cert-auth")
	}
	if ServerTLS(c) {
		args = append(args, "--cert-file="+ServerCertMountPath+"/tls.crt", "--key-file="+ServerCertMountPath+"/tls.key")
	}
	if ClientCertAuth(c) {
		args = append(args, "--trusted-ca-file="+ClientCAMountPath+"/ca.crt", "--client-cert-auth")
	}
	args = append(args, "--auto-compaction-retention="+AutoCompactionRetention, "--snapshot-count="+strconv.Itoa(SnapshotCount))
	return append(args, optionArgs(EffectiveOptions(c))...)
}

// optionArgs renders options as flags, sorted as strings (so "--a=1" sorts before "--a-b").
func optionArgs(opts map[string]string) []string {
	flags := make([]string, 0, len(opts))
	for k, v := range opts {
		if v == "" {
			flags = append(flags, "--"+k)
		} else {
			flags = append(flags, "--"+k+"="+v)
		}
	}
	slices.Sort(flags)
	return flags
}

// EffectiveOptions are spec.options plus the quota the operator injects when the options give
// none (missing or empty); a new operator must carry these to keep etcd's behaviour.
func EffectiveOptions(c *EtcdCluster) map[string]string {
	opts := maps.Clone(c.Spec.Options)
	if opts[QuotaOption] != "" {
		return opts
	}
	if q := DefaultQuotaBackendBytes(c); q > 0 {
		if opts == nil {
			opts = map[string]string{}
		}
		opts[QuotaOption] = strconv.FormatInt(q, 10)
	}
	return opts
}

// DefaultQuotaBackendBytes is floor(0.95 × size) of the PVC request or the emptyDir sizeLimit;
// 0 (nothing injected) for an emptyDir without a limit or a claim without a request.
func DefaultQuotaBackendBytes(c *EtcdCluster) int64 {
	var size resource.Quantity
	if ed := c.Spec.Storage.EmptyDir; ed != nil {
		if ed.SizeLimit != nil {
			size = *ed.SizeLimit
		}
	} else {
		size = *c.Spec.Storage.VolumeClaimTemplate.Spec.Resources.Requests.Storage()
	}
	// In float64 like the legacy operator, so odd sizes round the same way.
	return int64(math.Floor(float64(size.Value()) * QuotaFraction))
}

// HeadlessService gives the pods their DNS names; it publishes not-ready pods so members find
// each other before they are ready.
func HeadlessService(c *EtcdCluster) *corev1.Service {
	meta := ownedMeta(c, HeadlessServiceName(c))
	meta.Labels = Labels(c)
	if t := c.Spec.HeadlessServiceTemplate; t != nil {
		maps.Copy(meta.Labels, t.Labels)
		meta.Annotations = maps.Clone(t.Annotations)
	}
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: meta,
		Spec: corev1.ServiceSpec{
			Ports: []corev1.ServicePort{
				servicePort("peer", PeerPort),
				servicePort("client", ClientPort),
			},
			Type:                     corev1.ServiceTypeClusterIP,
			ClusterIP:                corev1.ClusterIPNone,
			Selector:                 Labels(c),
			PublishNotReadyAddresses: true,
		},
	}
}

// ClientService is the ClusterIP Service with serviceTemplate strategically merged onto it. A
// template port without targetPort merges as targetPort 0 (IntOrString has no empty JSON form),
// which the API server then defaults to the port, as it does for the legacy operator.
func ClientService(c *EtcdCluster) (*corev1.Service, error) {
	svc := corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: c.Name, Namespace: c.Namespace, Labels: Labels(c)},
		Spec: corev1.ServiceSpec{
			Ports:    []corev1.ServicePort{servicePort("client", ClientPort), servicePort("metrics", MetricsPort)},
			Type:     corev1.ServiceTypeClusterIP,
			Selector: Labels(c),
		},
	}
	if t := c.Spec.ServiceTemplate; t != nil {
		patch := corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: t.Name, Labels: t.Labels, Annotations: t.Annotations},
			Spec:       t.Spec,
		}
		merged, err := strategicMerge(svc, patch)
		if err != nil {
			return nil, fmt.Errorf("merging serviceTemplate of %s/%s: %w", c.Namespace, c.Name, err)
		}
		svc = merged
	}
	// Set after the merge, as the legacy operator does: the template cannot change them.
	svc.Namespace = c.Namespace
	svc.OwnerReferences = []metav1.OwnerReference{OwnerReference(c)}
	return &svc, nil
}

func servicePort(name string, port int32) corev1.ServicePort {
	return corev1.ServicePort{Name: name, Port: port, TargetPort: intstr.FromInt32(port), Protocol: corev1.ProtocolTCP}
}

// ClusterStateConfigMap is the ConfigMap the pods take ETCD_INITIAL_CLUSTER* from; state is
// InitialClusterStateNew until the StatefulSet first became ready, then existing.
func ClusterStateConfigMap(c *EtcdCluster, state string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: ownedMeta(c, ConfigMapName(c)),
		Data: map[string]string{
			"ETCD_INITIAL_CLUSTER_STATE": state,
			"ETCD_INITIAL_CLUSTER":       InitialCluster(c),
			"ETCD_INITIAL_CLUSTER_TOKEN": Token(c),
		},
	}
}

// InitialCluster is ETCD_INITIAL_CLUSTER: every ordinal of spec.replicas with its peer URL.
func InitialCluster(c *EtcdCluster) string {
	members := make([]string, Replicas(c))
	for i := range members {
		members[i] = PodName(c, i) + "=" + PeerURL(c, i)
	}
	return strings.Join(members, ",")
}

// PodDisruptionBudget is the PDB, nil without podDisruptionBudgetTemplate. Without a budget in
// the template it keeps a quorum available. The template's metadata is ignored, as in legacy.
func PodDisruptionBudget(c *EtcdCluster) *policyv1.PodDisruptionBudget {
	t := c.Spec.PodDisruptionBudgetTemplate
	if t == nil {
		return nil
	}
	spec := policyv1.PodDisruptionBudgetSpec{
		MinAvailable:               copyIntOrString(t.Spec.MinAvailable),
		MaxUnavailable:             copyIntOrString(t.Spec.MaxUnavailable),
		Selector:                   &metav1.LabelSelector{MatchLabels: Labels(c)},
		UnhealthyPodEvictionPolicy: ptr.To(policyv1.IfHealthyBudget),
	}
	if spec.MinAvailable == nil && spec.MaxUnavailable == nil {
		spec.MinAvailable = ptr.To(intstr.FromInt32(Replicas(c)/2 + 1))
	}
	return &policyv1.PodDisruptionBudget{
		TypeMeta:   metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"},
		ObjectMeta: ownedMeta(c, PDBName(c)),
		Spec:       spec,
	}
}

// strategicMerge applies patch over base as a strategic merge patch of T's type, the way the
// legacy operator merges its templates: fields omitted from patch keep base's values.
func strategicMerge[T any](base, patch T) (T, error) {
	var merged T
	baseJSON, err := json.Marshal(base)
	if err != nil {
		return merged, err
	}
	patchJSON, err := json.Marshal(patch)
	if err != nil {
		return merged, err
	}
	out, err := strategicpatch.StrategicMergePatch(baseJSON, patchJSON, merged)
	if err != nil {
		return merged, err
	}
	err = json.Unmarshal(out, &merged)
	return merged, err
}

func copyIntOrString(v *intstr.IntOrString) *intstr.IntOrString {
	if v == nil {
		return nil
	}
	return ptr.To(*v)
}
