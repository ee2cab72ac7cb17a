package provider

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// virtual-kubelet keeps the last status it is given: concurrent changes (two containers starting
// at once) must reach it in the order they were taken, or an older snapshot sticks.
func TestNotificationsKeepTheirOrder(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}}
	rt := testPodRuntime(pod)
	var mu sync.Mutex
	var last *corev1.Pod
	rt.p.NotifyPods(context.Background(), func(p *corev1.Pod) {
		runtime.Gosched() // widen the window between taking a snapshot and delivering it
		mu.Lock()
		last = p
		mu.Unlock()
	})
	for round := 0; round < 200; round++ {
		var wg sync.WaitGroup
		for i := 0; i < 4; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rt.mu.Lock()
				rt.message = fmt.Sprintf("round %d writer %d", round, i)
				rt.mu.Unlock()
				rt.changed()
			}()
		}
		wg.Wait()
		rt.mu.Lock()
		want := rt.message
		rt.mu.Unlock()
		if last.Status.Message != want {
			t.Fatalf("round %d: virtual-kubelet holds %q, the pod is at %q", round, last.Status.Message, want)
		}
	}
}
