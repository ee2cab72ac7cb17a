package etcdcluster

import (
	"context"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/resources"
)

// latchToken fixes --initial-cluster-token once, unique per incarnation of a same-named cluster.
func (r *Reconciler) latchToken(_ context.Context, st *clusterState) error {
	c := st.cluster
	if st.status.ClusterToken == "" {
		st.status.ClusterToken = fmt.Sprintf("%s-%s-%s", c.Namespace, c.Name, c.UID)
	}
	return nil
}

// ensureServices creates both Services and repairs what members depend on: selector, ports and
// publishNotReadyAddresses. Anything else users add is left alone.
func (r *Reconciler) ensureServices(ctx context.Context, st *clusterState) error {
	for _, want := range []*corev1.Service{resources.HeadlessService(st.cluster), resources.ClientService(st.cluster)} {
		if err := r.ensureService(ctx, want, st.cluster.Spec.AdditionalMetadata); err != nil {
			return err
		}
	}
	return nil
}

func (r *Reconciler) ensureService(ctx context.Context, want *corev1.Service, meta *v1alpha2.AdditionalMetadata) error {
	got := &corev1.Service{}
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(want), got)
	if apierrors.IsNotFound(err) {
		return r.Client.Create(ctx, want)
	}
	if err != nil {
		return err
	}
	patch := client.MergeFrom(got.DeepCopy())
	changed := !maps.Equal(got.Spec.Selector, want.Spec.Selector) ||
		got.Spec.PublishNotReadyAddresses != want.Spec.PublishNotReadyAddresses
	changed = resources.SyncUserMetadata(got, meta, resources.OwnedLabels(want)) || changed
	got.Spec.Selector, got.Spec.PublishNotReadyAddresses = want.Spec.Selector, want.Spec.PublishNotReadyAddresses
	for _, p := range want.Spec.Ports {
		i := slices.IndexFunc(got.Spec.Ports, func(q corev1.ServicePort) bool { return q.Name == p.Name })
		switch {
		case i < 0:
			got.Spec.Ports, changed = append(got.Spec.Ports, p), true
		case got.Spec.Ports[i].Port != p.Port || got.Spec.Ports[i].TargetPort != p.TargetPort:
			got.Spec.Ports[i].Port, got.Spec.Ports[i].TargetPort, changed = p.Port, p.TargetPort, true
		}
	}
	if !changed {
		return nil
	}
	return r.Client.Patch(ctx, got, patch)
}

// ensurePDB keeps the voters' budget; it is deleted while there are no voters.
func (r *Reconciler) ensurePDB(ctx context.Context, st *clusterState) error {
	want := resources.PodDisruptionBudget(st.cluster, st.liveVoters())
	got := &policyv1.PodDisruptionBudget{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: st.cluster.Namespace, Name: v1alpha2.PDBName(st.cluster.Name)}, got)
	switch {
	case apierrors.IsNotFound(err) && want == nil:
		return nil
	case apierrors.IsNotFound(err):
		return r.Client.Create(ctx, want)
	case err != nil:
		return err
	case !metav1.IsControlledBy(got, st.cluster) && want == nil:
		return nil // the user's own budget, kept while ours is switched off
	case !metav1.IsControlledBy(got, st.cluster):
		return fmt.Errorf("PodDisruptionBudget %s exists and is not the operator's: remove it or set spec.podDisruptionBudget.enabled=false", got.Name)
	case want == nil:
		return client.IgnoreNotFound(r.Client.Delete(ctx, got))
	}
	patch := client.MergeFrom(got.DeepCopy())
	metaChanged := resources.SyncUserMetadata(got, st.cluster.Spec.AdditionalMetadata, resources.OwnedLabels(want))
	if !metaChanged && equality.Semantic.DeepEqual(got.Spec.MinAvailable, want.Spec.MinAvailable) && got.Spec.MaxUnavailable == nil &&
		equality.Semantic.DeepEqual(got.Spec.Selector, want.Spec.Selector) {
		return nil
	}
	got.Spec.MinAvailable, got.Spec.MaxUnavailable, got.Spec.Selector = want.Spec.MinAvailable, nil, want.Spec.Selector
	return r.Client.Patch(ctx, got, patch)
}
