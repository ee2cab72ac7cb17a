//go:build e2e

package smoke

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cozystack/etcd-operator/e2e/framework"
)

// TestFaultHelpers exercises the framework's fault injection on one pod per node kind: a killed
// container is restarted, a filled volume shows the file inside the pod, and a PVC expansion
// reaches the claim's status.
func TestFaultHelpers(t *testing.T) {
	t.Parallel()
	eachKind(t, faultHelpers)
}

func faultHelpers(t *testing.T, c *framework.Cluster, k nodeKind) {
	ctx := context.Background()
	ns := newNamespace(t, c, "smoke-faults-"+k.name)
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "grow", Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	if _, err := c.Kube.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := volumePod(ns, c.Name, k, "target", corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "grow"}})
	mustCreatePod(t, c, pod)
	waitPodReady(t, c, ns, "target")
	waitMounted(t, c, ns, "target", "/data")

	t.Run("FillVolume", func(t *testing.T) {
		if _, err := c.FillVolume(ctx, ns, "target", "data", 10<<20); err != nil {
			t.Fatal(err)
		}
		// The file as the container sees it: its root and mounts, through its process.
		pid, err := c.ContainerPID(ctx, ns, "target", "main")
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(fmt.Sprintf("/proc/%d/root/data/lc-fill", pid))
		if err != nil || fi.Size() != 10<<20 {
			t.Fatalf("/data/lc-fill in the container: %v, %v", fi, err)
		}
		// A command in the container's namespaces through nsenter (no API, no node involved).
		out, _, err := c.ExecNsenter(ctx, ns, "target", "main", "/usr/local/bin/etcdctl", "endpoint", "health")
		if err != nil || !strings.Contains(out, "is healthy") {
			t.Fatalf("nsenter etcdctl endpoint health = %q, %v", out, err)
		}
	})

	t.Run("PVC expansion", func(t *testing.T) {
		p, err := c.Kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "grow", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
		if _, err := c.Kube.CoreV1().PersistentVolumeClaims(ns).Update(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		want := resource.MustParse("2Gi")
		framework.WaitFor(t, time.Minute, "claim capacity 2Gi", func() (bool, error) {
			p, err := c.Kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "grow", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			got := p.Status.Capacity[corev1.ResourceStorage]
			return got.Cmp(want) == 0, nil
		})
	})

	t.Run("KillContainer", func(t *testing.T) {
		before, err := c.ContainerPID(ctx, ns, "target", "main")
		if err != nil {
			t.Fatal(err)
		}
		if err := c.KillContainer(ctx, ns, "target", "main"); err != nil {
			t.Fatal(err)
		}
		framework.WaitFor(t, time.Minute, "container restarted", func() (bool, error) {
			p, err := c.Kube.CoreV1().Pods(ns).Get(ctx, "target", metav1.GetOptions{})
			if err != nil || len(p.Status.ContainerStatuses) == 0 {
				return false, err
			}
			st := p.Status.ContainerStatuses[0]
			return st.RestartCount >= 1 && st.Ready, nil
		})
		after, err := c.ContainerPID(ctx, ns, "target", "main")
		if err != nil || after == before {
			t.Fatalf("pid after restart = %d (before %d), %v", after, before, err)
		}
	})
}
