//go:build e2e

package realnodes

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// diagnose logs what a failed step leaves to read: the operator's log (through the kubelet, as
// `kubectl logs` would), the Pods of both namespaces and their Events. The Events are read
// through core/v1, where the kubelet writes (without the eventTime events.k8s.io/v1 sorts by).
func (s *suite) diagnose(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tail := int64(60)
	for _, p := range s.operatorPods(t) {
		raw, err := s.c.Kube.CoreV1().Pods(operatorNamespace).GetLogs(p.Name, &corev1.PodLogOptions{TailLines: &tail}).DoRaw(ctx)
		t.Logf("operator Pod %s log (err %v):\n%s", p.Name, err, raw)
	}
	for _, ns := range []string{operatorNamespace, etcdNamespace} {
		var pods corev1.PodList
		if err := s.c.Client.List(ctx, &pods, client.InNamespace(ns)); err == nil {
			for _, p := range pods.Items {
				t.Logf("Pod %s/%s on %s: %s init %+v containers %+v", ns, p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.InitContainerStatuses, p.Status.ContainerStatuses)
			}
		}
		var events corev1.EventList
		if err := s.c.Client.List(ctx, &events, client.InNamespace(ns)); err != nil {
			continue
		}
		slices.SortFunc(events.Items, func(a, b corev1.Event) int { return a.LastTimestamp.Compare(b.LastTimestamp.Time) })
		for _, e := range events.Items[max(0, len(events.Items)-40):] {
			t.Logf("%s %s %s/%s %s (x%d): %s", e.LastTimestamp.Format("15:04:05"), e.Source.Component, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Count, e.Message)
		}
	}
}
