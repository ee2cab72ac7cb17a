package etcdctl

import (
	"slices"
	"testing"

	"github.com/cozystack/etcd-operator/operator/internal/etcdaccess"
)

// The password travels in the environment only; without TLS or auth nothing else is set.
func TestEnv(t *testing.T) {
	got := Env(etcdaccess.Files{CAFile: "/d/ca.crt", CertFile: "/d/tls.crt", KeyFile: "/d/tls.key", Username: "op", Password: "s3cret"},
		[]string{"https://127.0.0.1:1", "https://127.0.0.1:2"})
	want := []string{"ETCDCTL_ENDPOINTS=https://127.0.0.1:1,https://127.0.0.1:2", "ETCDCTL_CACERT=/d/ca.crt",
		"ETCDCTL_CERT=/d/tls.crt", "ETCDCTL_KEY=/d/tls.key", "ETCDCTL_USER=op:s3cret"}
	if !slices.Equal(got, want) {
		t.Fatalf("%v", got)
	}
	if got := Env(etcdaccess.Files{}, []string{"http://127.0.0.1:1"}); !slices.Equal(got, []string{"ETCDCTL_ENDPOINTS=http://127.0.0.1:1"}) {
		t.Fatalf("plaintext: %v", got)
	}
}
