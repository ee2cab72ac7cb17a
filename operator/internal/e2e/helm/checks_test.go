//go:build e2e

package helm

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
)

// operatorPods are the Pods of the operator release.
func operatorPods(t *testing.T, c *framework.Cluster) []corev1.Pod {
	t.Helper()
	pods, err := e2eutil.OperatorPods(c, operatorNamespace, operatorRelease)
	if err != nil {
		t.Fatal(err)
	}
	return pods
}

// checkOperatorPod checks that the Pod runs the chart's container as the node agent's process:
// the overridden image, the chart's ServiceAccount with its token mounted where client-go's
// in-cluster config reads it, and a process of the chart's non-root user with the chart's
// flags. It returns the container's log file.
func checkOperatorPod(t *testing.T, c *framework.Cluster, p corev1.Pod) string {
	t.Helper()
	if p.Spec.ServiceAccountName != operatorRelease {
		t.Errorf("Pod %s: ServiceAccount %q, want %q", p.Name, p.Spec.ServiceAccountName, operatorRelease)
	}
	want := operatorImageRepository + ":" + operatorImageTag
	if len(p.Spec.Containers) != 1 || p.Spec.Containers[0].Image != want {
		t.Fatalf("Pod %s: containers %v, want one with image %s", p.Name, p.Spec.Containers, want)
	}
	mounted := false
	for _, m := range p.Spec.Containers[0].VolumeMounts {
		mounted = mounted || m.MountPath == "/var/run/secrets/kubernetes.io/serviceaccount"
	}
	if !mounted {
		t.Errorf("Pod %s: no ServiceAccount token volume mounted", p.Name)
	}
	ctx := context.Background()
	pid, err := c.ContainerPID(ctx, operatorNamespace, p.Name, "manager")
	if err != nil {
		t.Fatalf("Pod %s: %v", p.Name, err)
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("Pod %s: the manager process %d: %v", p.Name, pid, err)
	}
	if uid := procField(string(status), "Uid:"); !strings.HasPrefix(uid, "65532\t") {
		t.Errorf("Pod %s: manager process %d runs as uid %q, want the chart's 65532", p.Name, pid, uid)
	}
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if !strings.Contains(string(cmdline), "--leader-elect=true") {
		t.Errorf("Pod %s: manager command line %q lacks the chart's --leader-elect=true", p.Name, cmdline)
	}
	dir, _, err := c.PodDir(ctx, operatorNamespace, p.Name)
	if err != nil {
		t.Fatal(err)
	}
	return dir + "/manager.log"
}

// procField is the value of a "Name:\tvalue" line of /proc/<pid>/status.
func procField(status, name string) string {
	for _, line := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(line, name); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// clusterObjects lists, by kind, the names of what the tenant namespace holds of the kinds an
// EtcdCluster owns (directly or through its members) and of the chart's cert-manager kinds,
// and the PVs bound to its claims.
func clusterObjects(c *framework.Cluster, ns string) map[string][]string {
	ctx := context.Background()
	lists := map[string]client.ObjectList{
		"EtcdCluster": &v1alpha2.EtcdClusterList{}, "EtcdMember": &v1alpha2.EtcdMemberList{},
		"Pod": &corev1.PodList{}, "PersistentVolumeClaim": &corev1.PersistentVolumeClaimList{},
		"Service": &corev1.ServiceList{}, "PodDisruptionBudget": &policyv1.PodDisruptionBudgetList{},
	}
	for _, kind := range []string{"Certificate", "Issuer"} { // cert-manager's, not in the scheme
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(schema.GroupVersionKind{Group: "cert-manager.io", Version: "v1", Kind: kind + "List"})
		lists[kind] = l
	}
	out := map[string][]string{}
	for kind, list := range lists {
		if err := c.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
			out[kind] = append(out[kind], "list error: "+err.Error())
			continue
		}
		items, _ := meta.ExtractList(list)
		for _, item := range items {
			out[kind] = append(out[kind], item.(client.Object).GetName())
		}
	}
	var pvs corev1.PersistentVolumeList
	if err := c.Client.List(ctx, &pvs); err != nil {
		out["PersistentVolume"] = []string{"list error: " + err.Error()}
		return out
	}
	for _, pv := range pvs.Items {
		if pv.Spec.ClaimRef != nil && pv.Spec.ClaimRef.Namespace == ns {
			out["PersistentVolume"] = append(out["PersistentVolume"], pv.Name)
		}
	}
	return out
}

// checkClusterObjects checks that a converged cluster has what its uninstall must remove, so
// that "all gone" afterwards means something: per member an EtcdMember, a Pod, a PVC and its PV;
// the cluster's headless and client Services and its PDB; the chart's self-signed and CA
// Issuers and its CA, server, peer and client Certificates (the operator issues none: spec.tls
// names Secrets).
func checkClusterObjects(t *testing.T, c *framework.Cluster, ns string, members int) {
	t.Helper()
	want := map[string]int{"EtcdCluster": 1, "EtcdMember": members, "Pod": members, "PersistentVolumeClaim": members,
		"PersistentVolume": members, "Service": 2, "PodDisruptionBudget": 1,
		"Issuer": 2, "Certificate": 4}
	got := clusterObjects(c, ns)
	for kind, n := range want {
		if len(got[kind]) != n {
			t.Errorf("%s in %s: %v, want %d", kind, ns, got[kind], n)
		}
	}
}

// operatorObjects lists what is left of the operator release's objects.
func operatorObjects(c *framework.Cluster) []string {
	ctx := context.Background()
	objs := map[string]client.Object{
		"Deployment":         &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: operatorRelease}},
		"ServiceAccount":     &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: operatorRelease}},
		"Service":            &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: operatorRelease + "-metrics"}},
		"ClusterRole":        &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: operatorRelease}},
		"ClusterRoleBinding": &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: operatorRelease}},
		"ValidatingAdmissionPolicy": &admissionregistrationv1.ValidatingAdmissionPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: operatorRelease + "-deletion-protection"}},
		"ValidatingAdmissionPolicyBinding": &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
			ObjectMeta: metav1.ObjectMeta{Name: operatorRelease + "-deletion-protection"}},
	}
	var left []string
	for kind, obj := range objs {
		err := c.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		switch {
		case err == nil:
			left = append(left, kind+"/"+obj.GetName())
		case !apierrors.IsNotFound(err):
			left = append(left, fmt.Sprintf("%s: %v", kind, err))
		}
	}
	var pods corev1.PodList
	if err := c.Client.List(ctx, &pods, client.InNamespace(operatorNamespace)); err != nil {
		return append(left, "Pod: "+err.Error())
	}
	for _, p := range pods.Items {
		left = append(left, "Pod/"+p.Name)
	}
	return left
}

// forbiddenLines are the log lines where the apiserver refused the operator something.
func forbiddenLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if strings.Contains(strings.ToLower(sc.Text()), "forbidden") {
			out = append(out, sc.Text())
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// logTail is the last n lines of a file, for failure messages.
func logTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	lines = lines[max(0, len(lines)-n):]
	for i, l := range lines {
		if len(l) > 500 { // controller-runtime's error lines carry whole stack traces
			lines[i] = l[:500] + " …"
		}
	}
	return strings.Join(lines, "\n")
}

// secretsExist reports whether every named Secret of ns exists (cert-manager filled it).
func secretsExist(c *framework.Cluster, ns string, names ...string) (bool, string) {
	var missing []string
	for _, n := range names {
		if err := c.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: n}, &corev1.Secret{}); err != nil {
			missing = append(missing, fmt.Sprintf("%s: %v", n, err))
		}
	}
	return len(missing) == 0, fmt.Sprintf("missing %v", missing)
}
