package lifecycle

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

// A version with no image: the first member restarted into it cannot pull it; the member's Ready
// and the cluster's Degraded say ImagePullFailed with the image, an Event says so, and the
// rollout restarts nobody else. Setting the version back recovers the member.
func TestVersionWithoutImage(t *testing.T) {
	ns := newNamespace(t)
	newCluster(t, ns, "img", 3)
	waitFor(t, ns, "3 members", converged(t, ns, "img", 3))
	uids := podUIDs(t, ns)
	setVersion := func(v string) {
		t.Helper()
		c := getCluster(t, ns, "img")
		patch := client.MergeFrom(c.DeepCopy())
		c.Spec.Version = v
		if err := k8s.Patch(context.Background(), c, patch); err != nil {
			t.Fatal(err)
		}
	}
	setVersion("3.6.99")
	var stuck *corev1.Pod
	waitWithoutKubelet(t, ns, "a member restarted into 3.6.99", func() bool {
		for name := range uids {
			if p := pod(t, ns, name); p != nil && string(p.UID) != uids[name] {
				stuck = p
				return true
			}
		}
		return false
	})
	stuck.Status.Phase = corev1.PodPending
	stuck.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "etcd", Image: stuck.Spec.Containers[0].Image,
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "manifest unknown"}}}}
	if err := k8s.Status().Update(context.Background(), stuck); err != nil {
		t.Fatal(err)
	}
	waitWithoutKubelet(t, ns, "Degraded=ImagePullFailed naming the image", func() bool {
		d := meta.FindStatusCondition(getCluster(t, ns, "img").Status.Conditions, v1alpha2.ConditionDegraded)
		return d != nil && d.Reason == v1alpha2.ReasonImagePullFailed && strings.Contains(d.Message, "v3.6.99")
	})
	if len(events(t, ns, stuck.Name, v1alpha2.ReasonImagePullFailed)) == 0 {
		t.Error("no ImagePullFailed Event on the member")
	}
	for name, uid := range uids {
		if p := pod(t, ns, name); name != stuck.Name && (p == nil || string(p.UID) != uid) {
			t.Errorf("member %s was restarted too while %s cannot pull its image", name, stuck.Name)
		}
	}
	setVersion("3.6.16")
	waitFor(t, ns, "back on 3.6.16 and healthy", func() bool {
		d := meta.FindStatusCondition(getCluster(t, ns, "img").Status.Conditions, v1alpha2.ConditionDegraded)
		p := pod(t, ns, stuck.Name)
		return converged(t, ns, "img", 3)() && d != nil && d.Reason != v1alpha2.ReasonImagePullFailed &&
			p != nil && strings.HasSuffix(p.Spec.Containers[0].Image, "v3.6.16")
	})
}
