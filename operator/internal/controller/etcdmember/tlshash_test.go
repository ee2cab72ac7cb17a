package etcdmember

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func podMounting(secrets ...string) *corev1.Pod {
	p := &corev1.Pod{Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "data",
		VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}}}
	for _, s := range secrets {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "v-" + s,
			VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: s}}})
	}
	return p
}

func tlsData(cert, key, ca string) map[string][]byte {
	return map[string][]byte{"tls.crt": []byte(cert), "tls.key": []byte(key), "ca.crt": []byte(ca)}
}

// TestTLSHash: which hash a member Pod must carry for the Secrets it mounts. The reference is a
// Pod mounting the server and peer Secrets as first issued; a case says whether its hash must
// equal the reference (the kubelet must not be made to sync for nothing) or differ from it (the
// content the Pod should see changed: the kubelet must rewrite the volumes).
func TestTLSHash(t *testing.T) {
	issued := map[string]map[string][]byte{"server": tlsData("s1", "sk1", "ca1"), "peer": tlsData("p1", "pk1", "ca1")}
	with := func(name string, data map[string][]byte) map[string]map[string][]byte {
		out := map[string]map[string][]byte{"server": issued["server"], "peer": issued["peer"]}
		out[name] = data
		return out
	}
	reference, keep := tlsHash(podMounting("server", "peer"), issued)
	if reference == "" || keep {
		t.Fatalf("reference hash %q keep=%v, want a hash", reference, keep)
	}
	cases := []struct {
		name    string
		pod     *corev1.Pod
		secrets map[string]map[string][]byte
		keep    bool // a mounted Secret is unknown: leave the Pod's value alone
		none    bool // no Secret mounted: no annotation
		same    bool // the hash equals the reference
	}{
		{name: "same content read again", pod: podMounting("server", "peer"), secrets: with("server", tlsData("s1", "sk1", "ca1")), same: true},
		{name: "volumes in another order", pod: podMounting("peer", "server"), secrets: issued, same: true},
		{name: "a Secret mounted twice counts once", pod: podMounting("server", "peer", "server"), secrets: issued, same: true},
		{name: "a Secret not mounted is ignored", pod: podMounting("server", "peer"), secrets: with("other", tlsData("x", "y", "z")), same: true},
		{name: "leaf renewed", pod: podMounting("server", "peer"), secrets: with("server", tlsData("s2", "sk2", "ca1"))},
		{name: "only the key changed", pod: podMounting("server", "peer"), secrets: with("peer", tlsData("p1", "pk2", "ca1"))},
		{name: "CA widened", pod: podMounting("server", "peer"), secrets: with("server", tlsData("s1", "sk1", "ca1ca2"))},
		{name: "a key added", pod: podMounting("server", "peer"), secrets: with("server", map[string][]byte{
			"tls.crt": []byte("s1"), "tls.key": []byte("sk1"), "ca.crt": []byte("ca1"), "extra": nil})},
		{name: "bytes moved between fields", pod: podMounting("server", "peer"), secrets: with("server", tlsData("s", "1sk1", "ca1"))},
		{name: "one Secret fewer mounted", pod: podMounting("server"), secrets: issued},
		{name: "a mounted Secret not read", pod: podMounting("server", "peer"), secrets: map[string]map[string][]byte{"server": issued["server"]}, keep: true},
		{name: "no Secret mounted", pod: podMounting(), secrets: issued, none: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, keep := tlsHash(tc.pod, tc.secrets)
			switch {
			case keep != tc.keep:
				t.Fatalf("keep = %v, want %v", keep, tc.keep)
			case tc.keep:
			case tc.none && got != "":
				t.Fatalf("hash %q for a Pod mounting no Secret, want none", got)
			case tc.none:
			case got == "":
				t.Fatal("no hash for a Pod mounting Secrets")
			case (got == reference) != tc.same:
				t.Fatalf("hash %q, reference %q: equal=%v, want %v", got, reference, got == reference, tc.same)
			}
		})
	}
}
