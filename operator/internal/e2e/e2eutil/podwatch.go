//go:build e2e

package e2eutil

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/cozystack/etcd-operator/e2e/framework"
)

// WatchPods calls seen with every state of the namespace's Pods the apiserver reports (those
// opts selects), from opts.ResourceVersion on ("": from now), in order, on a goroutine of its
// own, until seen returns true or the test ends. A poll can miss a state that lasts less than
// its interval; the watch cannot. It is re-established when it ends, going on from the last
// version seen (from now, should that version be compacted away).
func WatchPods(t *testing.T, c *framework.Cluster, ns string, opts metav1.ListOptions, seen func(*corev1.Pod) (done bool)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		for done := false; ctx.Err() == nil && !done; {
			w, err := c.Kube.CoreV1().Pods(ns).Watch(ctx, opts)
			if err != nil {
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
				continue
			}
			for ev := range w.ResultChan() {
				if ev.Type == watch.Error {
					opts.ResourceVersion = ""
					break
				}
				if p, ok := ev.Object.(*corev1.Pod); ok {
					opts.ResourceVersion = p.ResourceVersion
					if done = seen(p); done {
						break
					}
				}
			}
			w.Stop()
		}
	}()
}
