package etcdmember

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/resources"
)

func TestAdoptedRevision(t *testing.T) {
	pod := func(vols ...corev1.Volume) *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{Volumes: append([]corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-etcd-abcde"}}}}, vols...)}}
	}
	secret := func(vol, name string) corev1.Volume {
		return corev1.Volume{Name: vol, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: name}}}
	}
	bundle := corev1.Volume{Name: "trust", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "etcd-trust-1"}}}}
	ours := pod(secret("tls-client", "etcd-active-server-tls"), secret("tls-peer", "etcd-active-peer-tls"), bundle)
	for _, tc := range []struct {
		name          string
		live, desired *corev1.Pod
		want          string
	}{
		{"plaintext, as the template", pod(), pod(), "rev"},
		{"the template's material, volumes in another order", pod(bundle, secret("p", "etcd-active-peer-tls"), secret("c", "etcd-active-server-tls")), ours, "rev"},
		// The public operator's Pod mounts the cluster's Secrets (Cozystack's) directly.
		{"the public operator's TLS Pod", pod(secret("tls-client", "etcd-server-tls"), secret("tls-peer", "etcd-peer-tls")), ours, foreignRevision},
		{"TLS the template no longer has", pod(secret("tls-client", "etcd-server-tls")), pod(), foreignRevision},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := adoptedRevision(tc.live, tc.desired, "rev"); got != tc.want {
				t.Errorf("adoptedRevision = %q, want %q", got, tc.want)
			}
			stamped := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
				v1alpha2.AnnotationPodRevision: adoptedRevision(tc.live, tc.desired, "rev")}}}
			if got, want := outdated(podRevision(stamped), "rev"), tc.want == foreignRevision; got != want {
				t.Errorf("the stamped Pod is outdated: %t, want %t", got, want)
			}
		})
	}
}

// Outdated is what the upgrade survey announces: it must agree with what the member controller
// then does to each kind of Pod an earlier build left.
func TestOutdatedAgreesWithTheRollout(t *testing.T) {
	r := &Reconciler{ImageRepository: "quay.io/coreos/etcd", AgentImage: "operator:new"}
	m := &v1alpha2.EtcdMember{ObjectMeta: metav1.ObjectMeta{Name: "etcd-abcde", Namespace: "ns"},
		Spec: v1alpha2.EtcdMemberSpec{ClusterName: "etcd", Version: "3.6.16", InitialCluster: "etcd-abcde=http://x:2380",
			Storage: v1alpha2.StorageSpec{Medium: v1alpha2.StorageMediumMemory}}}
	c := &v1alpha2.EtcdCluster{Status: v1alpha2.EtcdClusterStatus{ClusterID: "1"}}
	desired, revision, _ := r.desiredPod(m, c, nil)
	stamp := func(p *corev1.Pod, rev string) *corev1.Pod {
		p = p.DeepCopy()
		p.Annotations = map[string]string{v1alpha2.AnnotationPodRevision: rev}
		return p
	}
	olderBuild := desired.DeepCopy() // the same spec, made by a build with another agent image
	for i := range olderBuild.Spec.InitContainers {
		olderBuild.Spec.InitContainers[i].Image = "operator:old"
	}
	foreign := desired.DeepCopy()
	foreign.Spec.Volumes = append(foreign.Spec.Volumes, corev1.Volume{Name: "tls", VolumeSource: corev1.VolumeSource{
		Secret: &corev1.SecretVolumeSource{SecretName: "etcd-server-tls"}}})
	for _, tc := range []struct {
		name string
		live *corev1.Pod
		want bool
	}{
		{"this build's revision", stamp(desired, revision), false},
		{"another revision", stamp(desired, "older"), true},
		{"an older build's whole-spec hash of the same spec", stamp(olderBuild, resources.LegacyPodRevision(olderBuild, olderBuild)), false},
		{"no revision, the template's volumes", stamp(desired, ""), false},
		{"no revision, Secrets the template does not mount", stamp(foreign, ""), true},
	} {
		if got := r.Outdated(m, c, tc.live); got != tc.want {
			t.Errorf("%s: Outdated = %t, want %t", tc.name, got, tc.want)
		}
	}
}
