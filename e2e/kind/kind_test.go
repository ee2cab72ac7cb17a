package kind

import (
	"os/exec"
	"strings"
	"testing"
)

// The kind e2e cannot run here (no Docker): its dry run must print the plan in order.
func TestKindScriptDryRun(t *testing.T) {
	out, err := exec.Command("bash", "run.sh", "--dry-run").CombinedOutput()
	if err != nil {
		t.Fatalf("run.sh --dry-run: %v\n%s", err, out)
	}
	want := []string{
		"+ kind create cluster --name etcd-operator-e2e",
		"+ docker build -t etcd-operator:kind-e2e",
		"+ kind load docker-image etcd-operator:kind-e2e",
		"jetstack/cert-manager --version v1.21.2",
		"clastix/kamaji --version 1.0.0",
		"charts/etcd-operator",
		"--set tenantController.enabled=true",
		"+ kubectl apply -f",
		"tenant-etcd-state",
		"kubernetesResources.version.status",
		"+ kubectl -n tenant-a delete tcp/k8s",
		"etcdcluster/k8s-etcd --for=delete",
		"kind e2e passed",
		"+ kind delete cluster --name etcd-operator-e2e",
	}
	rest := string(out)
	for _, w := range want {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Fatalf("dry run lacks %q (or prints it out of order):\n%s", w, out)
		}
		rest = rest[i+len(w):]
	}
	if out, err := exec.Command("bash", "run.sh", "--bogus").CombinedOutput(); err == nil || !strings.Contains(string(out), "unknown argument") {
		t.Errorf("an unknown argument was accepted: %v %s", err, out)
	}
}
