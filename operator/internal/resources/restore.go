package resources

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/snapshot"
)

// MemberRestoreOf resolves a restore source for a member: an S3 object or a PVC file as given,
// or a Complete EtcdSnapshot's artifact (snap, required then) with its checksum.
func MemberRestoreOf(src v1alpha2.RestoreSource, snap *v1alpha2.EtcdSnapshot) (*v1alpha2.MemberRestore, error) {
	if src.SnapshotRef == nil {
		return &v1alpha2.MemberRestore{Source: v1alpha2.RestoreSource{S3: src.S3, PVC: src.PVC, Encryption: src.Encryption}}, nil
	}
	if snap == nil || snap.Status.Phase != v1alpha2.SnapshotComplete || snap.Status.Artifact == nil {
		return nil, fmt.Errorf("EtcdSnapshot %s is not Complete", src.SnapshotRef.Name)
	}
	art := snap.Status.Artifact
	out := &v1alpha2.MemberRestore{Checksum: art.Checksum}
	if art.Encryption != nil {
		out.Source.Encryption = &v1alpha2.SnapshotEncryption{SecretRef: corev1.LocalObjectReference{Name: art.Encryption.SecretName}}
	}
	// The artifact's name follows how it was stored: the spec, immutable, says so.
	file := snap.Spec.Destination.ArtifactName(snap.Name)
	switch d := snap.Spec.Destination; {
	case d.S3 != nil:
		s3 := *d.S3
		s3.Key = v1alpha2.SnapshotObjectKey(d.S3.Key, file)
		out.Source.S3 = &s3
	case d.PVC != nil:
		out.Source.PVC = &v1alpha2.PVCLocation{ClaimName: d.PVC.ClaimName, SubPath: v1alpha2.SnapshotFilePath(d.PVC.SubPath, file)}
	default:
		return nil, fmt.Errorf("EtcdSnapshot %s has no destination", snap.Name)
	}
	return out, nil
}

const (
	toolsVolume         = "restore-tools"
	toolsDir            = "/tools"
	restoreSourceVolume = "restore-source"
	restoreSourceDir    = "/restore/src"
)

// restoring: the member's Pod starts by restoring its data dir from a snapshot. Only a seed
// restores, and only before its cluster has formed: afterwards its data is the cluster's.
func restoring(m *v1alpha2.EtcdMember, opts PodOptions) bool {
	return m.Spec.Restore != nil && m.Spec.Bootstrap && !opts.ClusterFormed && !opts.Steady
}

// restoreInitContainers put the agent on a shared volume (the operator's image), then restore
// the data dir with it inside the member's own etcd image, so the etcdutl that restores is
// the version the member runs.
func restoreInitContainers(m *v1alpha2.EtcdMember, opts PodOptions) []corev1.Container {
	tools := corev1.VolumeMount{Name: toolsVolume, MountPath: toolsDir}
	install := corev1.Container{
		Name: v1alpha2.ToolsContainer, Image: opts.AgentImage,
		Command:         []string{"/manager", snapshot.CommandInstallTools, toolsDir},
		VolumeMounts:    []corev1.VolumeMount{tools},
		SecurityContext: containerSecurityContext(),
		Resources:       agentResources(),
	}
	restore := corev1.Container{
		Name: v1alpha2.RestoreContainer, Image: Image(m, opts.ImageRepository),
		Command:                  []string{toolsDir + "/manager", snapshot.CommandRestoreAgent},
		Env:                      restoreEnv(m),
		VolumeMounts:             append([]corev1.VolumeMount{{Name: "data", MountPath: DataDir}, tools}, restoreSourceMounts(m.Spec.Restore)...),
		SecurityContext:          containerSecurityContext(),
		Resources:                corev1.ResourceRequirements{Requests: agentResources().Requests}, // no limit: restores can be large
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
	mountEncryptionKeys(&restore, m.Spec.Restore.Source.Encryption)
	return []corev1.Container{install, restore}
}

func restoreEnv(m *v1alpha2.EtcdMember) []corev1.EnvVar {
	r := m.Spec.Restore
	env := []corev1.EnvVar{
		{Name: snapshot.EnvDataDir, Value: MemberDataDir(m)},
		{Name: snapshot.EnvEtcdName, Value: m.Name},
		{Name: snapshot.EnvEtcdInitialCluster, Value: m.Spec.InitialCluster},
		{Name: snapshot.EnvEtcdInitialClusterToken, Value: m.Spec.ClusterToken},
		{Name: snapshot.EnvEtcdInitialAdvertisePeer, Value: PeerURL(m)},
		{Name: snapshot.EnvEtcdVersion, Value: m.Spec.Version},
	}
	if r.BumpRevision > 0 {
		env = append(env, corev1.EnvVar{Name: snapshot.EnvRestoreBumpRevision, Value: strconv.FormatInt(r.BumpRevision, 10)},
			corev1.EnvVar{Name: snapshot.EnvRestoreMarkCompacted, Value: "true"})
	}
	return append(env, restoreSourceEnv(r)...)
}

// restoreSourceEnv tells the restore agent where the snapshot is and what it must hash to.
func restoreSourceEnv(r *v1alpha2.MemberRestore) []corev1.EnvVar {
	var env []corev1.EnvVar
	if r.Checksum != "" {
		env = append(env, corev1.EnvVar{Name: snapshot.EnvRestoreChecksum, Value: r.Checksum})
	}
	switch src := r.Source; {
	case src.S3 != nil:
		env = append(env, corev1.EnvVar{Name: snapshot.EnvRestoreSource, Value: snapshot.DestS3})
		env = append(env, S3Env(*src.S3, src.S3.Key)...)
	case src.PVC != nil:
		env = append(env, corev1.EnvVar{Name: snapshot.EnvRestoreSource, Value: snapshot.DestPVC},
			corev1.EnvVar{Name: snapshot.EnvRestoreFile, Value: restoreSourceDir + "/" + trimSlash(src.PVC.SubPath)})
	}
	return env
}

func restoreSourceMounts(r *v1alpha2.MemberRestore) []corev1.VolumeMount {
	if r.Source.PVC == nil {
		return nil
	}
	return []corev1.VolumeMount{{Name: restoreSourceVolume, MountPath: restoreSourceDir, ReadOnly: true}}
}

func restoreVolumes(m *v1alpha2.EtcdMember) []corev1.Volume {
	vols := []corev1.Volume{{Name: toolsVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	vols = append(vols, restoreSourceVolumes(m.Spec.Restore)...)
	return append(vols, encryptionKeysVolume(m.Spec.Restore.Source.Encryption)...)
}

func restoreSourceVolumes(r *v1alpha2.MemberRestore) []corev1.Volume {
	p := r.Source.PVC
	if p == nil {
		return nil
	}
	return []corev1.Volume{{Name: restoreSourceVolume, VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: p.ClaimName, ReadOnly: true}}}}
}

// RestoreVerifyPod reads a rollback's source through and checks it (checksum, decryption, etcd's trailer)
// before anything of the cluster is stopped: `manager restore-agent` in verify-only mode, in
// the operator's image, owned by the EtcdRestore. It writes nothing.
func RestoreVerifyPod(er *v1alpha2.EtcdRestore, c *v1alpha2.EtcdCluster, r *v1alpha2.MemberRestore, image string) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: v1alpha2.RestoreVerifyPodName(er.Name), Namespace: er.Namespace,
			Labels:          backupLabels(er.Spec.ClusterRef.Name, v1alpha2.LabelRestore, er.Name),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(er, v1alpha2.GroupVersion.WithKind("EtcdRestore"))},
		},
		Spec: agentPodSpec(c, image, snapshot.CommandRestoreAgent),
	}
	pod.Spec.Volumes = restoreSourceVolumes(r)
	ctr := &pod.Spec.Containers[0]
	ctr.Env = append([]corev1.EnvVar{{Name: snapshot.EnvRestoreVerifyOnly, Value: "true"}}, restoreSourceEnv(r)...)
	ctr.VolumeMounts = restoreSourceMounts(r)
	pod.Spec.Volumes = append(pod.Spec.Volumes, encryptionKeysVolume(r.Source.Encryption)...)
	mountEncryptionKeys(ctr, r.Source.Encryption)
	return pod
}

// S3Env is how an agent reaches an S3 object: the location and the credentials, which come
// from the user's Secret into the agent's environment and never pass through the operator.
func S3Env(s3 v1alpha2.S3Location, key string) []corev1.EnvVar {
	fromSecret := func(name, secretKey string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: s3.CredentialsSecretRef, Key: secretKey}}}
	}
	return []corev1.EnvVar{
		{Name: snapshot.EnvS3Endpoint, Value: s3.Endpoint},
		{Name: snapshot.EnvS3Bucket, Value: s3.Bucket},
		{Name: snapshot.EnvS3Key, Value: key},
		{Name: snapshot.EnvS3Region, Value: s3.Region},
		{Name: snapshot.EnvS3ForcePathStyle, Value: strconv.FormatBool(s3.ForcePathStyle)},
		fromSecret(snapshot.EnvAWSAccessKeyID, snapshot.SecretKeyAccessKeyID),
		fromSecret(snapshot.EnvAWSSecretAccessKey, snapshot.SecretKeySecretAccessKey),
	}
}

func trimSlash(p string) string {
	for len(p) > 0 && p[0] == '/' {
		p = p[1:]
	}
	return p
}
