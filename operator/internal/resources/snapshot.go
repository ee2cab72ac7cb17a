package resources

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/snapshot"
)

// Where a snapshot agent finds what it mounts.
const (
	agentCADir     = "/etc/etcd/tls/ca"
	agentClientDir = "/etc/etcd/tls/client"
	agentAuthDir   = "/etc/etcd/auth"
	agentPVCDir    = "/snapshot"
	// agentKeyDir holds the encryption Secret's age keys (snapshot.EnvEncryptionKeyDir).
	agentKeyDir = "/etc/etcd-backup/encryption"
)

// AgentSource is how a snapshot agent reaches the cluster's etcd.
type AgentSource struct {
	// Members to stream from, in order of preference (followers first, the leader last).
	Members []v1alpha2.EtcdMember
	// TLS: the members serve client TLS; MTLS: they want the operator's client certificate.
	TLS, MTLS bool
	// Auth: etcd auth is on; the agent logs in as the operator's own user.
	Auth bool
}

// SnapshotAgentPod takes a snapshot: the operator's image runs `manager snapshot-agent`, which
// streams it from the first member that can serve it to the destination, verifies it, and
// writes the result to its termination log (snapshot.Result). It carries none of the member
// labels, so no Service or budget of the cluster selects it.
func SnapshotAgentPod(s *v1alpha2.EtcdSnapshot, c *v1alpha2.EtcdCluster, src AgentSource, image string) *corev1.Pod {
	pod := agentPod(s, c, v1alpha2.SnapshotAgentPodName(s.Name), image)
	ctr := &pod.Spec.Containers[0]
	names := make([]string, 0, len(src.Members))
	urls := make([]string, 0, len(src.Members))
	for i := range src.Members {
		names, urls = append(names, src.Members[i].Name), append(urls, ClientURL(&src.Members[i]))
	}
	ctr.Env = append(ctr.Env,
		corev1.EnvVar{Name: snapshot.EnvEtcdEndpoints, Value: strings.Join(urls, ",")},
		corev1.EnvVar{Name: snapshot.EnvEtcdMemberNames, Value: strings.Join(names, ",")},
		corev1.EnvVar{Name: snapshot.EnvSnapshotOwner, Value: string(s.UID)},
	)
	mountEtcdAccess(pod, c, src)
	mountDestination(pod, s)
	if comp := s.Spec.Destination.EffectiveCompression(); comp != v1alpha2.CompressionNone {
		ctr.Env = append(ctr.Env, corev1.EnvVar{Name: snapshot.EnvSnapshotCompression, Value: string(comp)})
	}
	pod.Spec.Volumes = append(pod.Spec.Volumes, encryptionKeysVolume(s.Spec.Destination.Encryption)...)
	mountEncryptionKeys(ctr, s.Spec.Destination.Encryption)
	return pod
}

// encryptionKeysVolume is the encryption Secret as a volume (none when enc is nil).
func encryptionKeysVolume(enc *v1alpha2.SnapshotEncryption) []corev1.Volume {
	if enc == nil {
		return nil
	}
	return []corev1.Volume{{Name: encryptionKeysVolumeName, VolumeSource: corev1.VolumeSource{
		Secret: &corev1.SecretVolumeSource{SecretName: enc.SecretRef.Name, DefaultMode: ptr.To[int32](0o440)}}}}
}

// mountEncryptionKeys gives an agent the encryption Secret's age keys as files, never as
// environment (which `kubectl describe` and crash dumps show); the Pod needs
// encryptionKeysVolume. Nothing when enc is nil.
func mountEncryptionKeys(ctr *corev1.Container, enc *v1alpha2.SnapshotEncryption) {
	if enc == nil {
		return
	}
	ctr.VolumeMounts = append(ctr.VolumeMounts, corev1.VolumeMount{Name: encryptionKeysVolumeName, MountPath: agentKeyDir, ReadOnly: true})
	ctr.Env = append(ctr.Env, corev1.EnvVar{Name: snapshot.EnvEncryptionKeyDir, Value: agentKeyDir})
}

const encryptionKeysVolumeName = "encryption-keys"

// SnapshotCleanupPod deletes a snapshot's artifact (deletionPolicy Delete) and reports it.
func SnapshotCleanupPod(s *v1alpha2.EtcdSnapshot, c *v1alpha2.EtcdCluster, image string) *corev1.Pod {
	pod := agentPod(s, c, v1alpha2.SnapshotCleanupPodName(s.Name), image)
	pod.Spec.Containers[0].Env = append(pod.Spec.Containers[0].Env,
		corev1.EnvVar{Name: snapshot.EnvSnapshotAction, Value: snapshot.ActionDelete},
		corev1.EnvVar{Name: snapshot.EnvSnapshotOwner, Value: string(s.UID)})
	mountDestination(pod, s)
	return pod
}

func agentPod(s *v1alpha2.EtcdSnapshot, c *v1alpha2.EtcdCluster, name, image string) *corev1.Pod {
	labels := map[string]string{
		v1alpha2.LabelSnapshot: s.Name, v1alpha2.LabelAppManagedBy: v1alpha2.ManagedBy,
		v1alpha2.LabelAppComponent: v1alpha2.ComponentSnapshotAgent,
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: s.Namespace, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(s, v1alpha2.GroupVersion.WithKind("EtcdSnapshot"))},
		},
		Spec: agentPodSpec(c, image, snapshot.CommandSnapshotAgent),
	}
}

// agentPodSpec runs one agent subcommand of the operator's image once, as restricted as a
// member and scheduled where the cluster's members may go, with no API access.
func agentPodSpec(c *v1alpha2.EtcdCluster, image, command string) corev1.PodSpec {
	return corev1.PodSpec{
		RestartPolicy:                corev1.RestartPolicyNever,
		AutomountServiceAccountToken: ptr.To(false),
		EnableServiceLinks:           ptr.To(false),
		SecurityContext:              podSecurityContext(),
		NodeSelector:                 c.Spec.NodeSelector,
		Tolerations:                  c.Spec.Tolerations,
		PriorityClassName:            c.Spec.PriorityClassName,
		Containers: []corev1.Container{{
			Name: v1alpha2.AgentContainer, Image: image,
			Command:                  []string{"/manager", command},
			SecurityContext:          containerSecurityContext(),
			Resources:                agentResources(),
			TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		}},
	}
}

// mountEtcdAccess gives the agent what the operator dials the cluster with: the CA members'
// certificates chain to, the operator's client key pair under mTLS, its etcd user's password.
func mountEtcdAccess(pod *corev1.Pod, c *v1alpha2.EtcdCluster, src AgentSource) {
	ctr := &pod.Spec.Containers[0]
	if src.TLS {
		addSecretVolume(pod, "etcd-ca", v1alpha2.ActiveServerSecretName(c.Name), agentCADir, "ca.crt")
		ctr.Env = append(ctr.Env, corev1.EnvVar{Name: snapshot.EnvEtcdCAFile, Value: agentCADir + "/ca.crt"})
	}
	if src.TLS && src.MTLS {
		addSecretVolume(pod, "etcd-client", v1alpha2.ActiveOperatorClientSecretName(c.Name), agentClientDir, "tls.crt", "tls.key")
		ctr.Env = append(ctr.Env, corev1.EnvVar{Name: snapshot.EnvEtcdCertFile, Value: agentClientDir + "/tls.crt"},
			corev1.EnvVar{Name: snapshot.EnvEtcdKeyFile, Value: agentClientDir + "/tls.key"})
	}
	if src.Auth {
		addSecretVolume(pod, "etcd-auth", v1alpha2.OperatorAuthSecretName(c.Name), agentAuthDir, corev1.BasicAuthPasswordKey)
		ctr.Env = append(ctr.Env, corev1.EnvVar{Name: snapshot.EnvEtcdUsername, Value: v1alpha2.OperatorUser},
			corev1.EnvVar{Name: snapshot.EnvEtcdPasswordFile, Value: agentAuthDir + "/" + corev1.BasicAuthPasswordKey})
	}
}

// mountDestination points the agent at the snapshot's artifact.
func mountDestination(pod *corev1.Pod, s *v1alpha2.EtcdSnapshot) {
	ctr := &pod.Spec.Containers[0]
	switch d := s.Spec.Destination; {
	case d.S3 != nil:
		ctr.Env = append(ctr.Env, corev1.EnvVar{Name: snapshot.EnvSnapshotDest, Value: snapshot.DestS3})
		ctr.Env = append(ctr.Env, S3Env(*d.S3, v1alpha2.SnapshotObjectKey(d.S3.Key, d.ArtifactName(s.Name)))...)
	case d.PVC != nil:
		path := v1alpha2.SnapshotFilePath(d.PVC.SubPath, d.ArtifactName(s.Name))
		dir, file := splitPath(path)
		ctr.Env = append(ctr.Env,
			corev1.EnvVar{Name: snapshot.EnvSnapshotDest, Value: snapshot.DestPVC},
			corev1.EnvVar{Name: snapshot.EnvPVCDir, Value: strings.TrimSuffix(agentPVCDir+"/"+dir, "/")},
			corev1.EnvVar{Name: snapshot.EnvPVCFile, Value: file},
			corev1.EnvVar{Name: snapshot.EnvPVCClaim, Value: d.PVC.ClaimName},
			corev1.EnvVar{Name: snapshot.EnvPVCPath, Value: path})
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "destination", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: d.PVC.ClaimName}}})
		ctr.VolumeMounts = append(ctr.VolumeMounts, corev1.VolumeMount{Name: "destination", MountPath: agentPVCDir})
	}
}

func addSecretVolume(pod *corev1.Pod, volume, secret, dir string, keys ...string) {
	items := make([]corev1.KeyToPath, 0, len(keys))
	for _, k := range keys {
		items = append(items, corev1.KeyToPath{Key: k, Path: k})
	}
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: volume, VolumeSource: corev1.VolumeSource{
		Secret: &corev1.SecretVolumeSource{SecretName: secret, Items: items, DefaultMode: ptr.To[int32](0o440)}}})
	pod.Spec.Containers[0].VolumeMounts = append(pod.Spec.Containers[0].VolumeMounts,
		corev1.VolumeMount{Name: volume, MountPath: dir, ReadOnly: true})
}

// splitPath splits a/b/c.db into a/b and c.db.
func splitPath(p string) (dir, file string) {
	if i := strings.LastIndex(p, "/"); i >= 0 {
		return p[:i], p[i+1:]
	}
	return "", p
}
