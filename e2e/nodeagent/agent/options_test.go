package agent

import (
	"io"
	"strings"
	"testing"
)

func TestParseFlags(t *testing.T) {
	full := []string{"--kubeconfig", "/k", "--node-name", "lc-node-1", "--node-ip", "10.244.1.1",
		"--pod-cidr", "10.244.1.0/24", "--bridge", "lcbr0", "--netns-prefix", "lc-a-p", "--state-dir", "/s",
		"--tools-dir", "/t", "--cluster-dns", "10.244.0.1", "--cluster-domain", "cluster.local",
		"--listen-addr", "10.244.1.1:10250", "--tls-cert", "/c", "--tls-key", "/k2", "--client-ca", "/ca",
		"--operator-binary", "", "--stop-pods-on-exit"}
	o, err := ParseFlags(full, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.NodeName != "lc-node-1" || o.NetnsPrefix != "lc-a-p" || !o.StopPodsOnExit || o.OperatorBinary != "" || o.ListenAddr != "10.244.1.1:10250" {
		t.Fatalf("parsed %+v", o)
	}
	_, err = ParseFlags([]string{"--node-name", "n", "--tls-cert", "/c"}, io.Discard)
	for _, want := range []string{"--node-ip is required", "--state-dir is required", "--tls-cert and --tls-key go together"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
}
