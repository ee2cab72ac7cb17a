package provider

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestProjects(t *testing.T) {
	secret := sourceRef{secret: true, namespace: "ns", name: "tls"}
	configMap := sourceRef{namespace: "ns", name: "tls"}
	projected := func(sources ...corev1.VolumeProjection) corev1.Volume {
		return corev1.Volume{VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: sources}}}
	}
	tests := []struct {
		name      string
		v         corev1.Volume
		ref       sourceRef
		want, tok bool
	}{
		{"secret volume", corev1.Volume{VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "tls"}}}, secret, true, false},
		{"another secret", corev1.Volume{VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "other"}}}, secret, false, false},
		{"a ConfigMap of the same name is not the Secret", corev1.Volume{VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "tls"}}}}, secret, false, false},
		{"configMap volume", corev1.Volume{VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "tls"}}}}, configMap, true, false},
		{"projected secret", projected(corev1.VolumeProjection{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "tls"}}}), secret, true, false},
		{"projected with a token", projected(
			corev1.VolumeProjection{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "tls"}}},
			corev1.VolumeProjection{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}), configMap, true, true},
		{"emptyDir", corev1.Volume{VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}, secret, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := projects(&tt.v, tt.ref); got != tt.want {
				t.Errorf("projects = %v, want %v", got, tt.want)
			}
			if got := hasToken(&tt.v); got != tt.tok {
				t.Errorf("hasToken = %v, want %v", got, tt.tok)
			}
		})
	}
}
