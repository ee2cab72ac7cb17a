package topology

import (
	"context"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

// NodeState is what the self-healing rules read of a member Pod's node.
type NodeState struct {
	// NotReady since NotReadySince (the Ready condition's last transition).
	NotReady      bool
	NotReadySince time.Time
	// OutOfService: an admin marked the node shut down for good with Kubernetes' taint
	// node.kubernetes.io/out-of-service (non-graceful node shutdown): nothing on it still runs.
	OutOfService bool
	// BootID is the node's status.nodeInfo.bootID ("" unknown).
	BootID string
}

// StateOf reads a node's readiness and out-of-service taint; nil (unknown) is neither.
func StateOf(n *corev1.Node) NodeState {
	var s NodeState
	if n == nil {
		return s
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue {
			s.NotReady, s.NotReadySince = true, c.LastTransitionTime.Time
		}
	}
	s.OutOfService = slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeOutOfService })
	s.BootID = n.Status.NodeInfo.BootID
	return s
}

// VolumePinned: the PV can be used only on node (node-local storage: every term of its required
// node affinity names that node alone), so a member on it cannot move off the node with its data.
// A PV without node affinity (network storage) or admitting other nodes (a zone) can follow.
func VolumePinned(pv *corev1.PersistentVolume, node string) bool {
	if pv == nil || pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return false
	}
	terms := pv.Spec.NodeAffinity.Required.NodeSelectorTerms
	return len(terms) > 0 && !slices.ContainsFunc(terms, func(t corev1.NodeSelectorTerm) bool { return !onlyNode(t, node) })
}

// onlyNode: the term admits node alone (hostname or metadata.name In [node]).
func onlyNode(t corev1.NodeSelectorTerm, node string) bool {
	only := func(op corev1.NodeSelectorOperator, values []string) bool {
		return op == corev1.NodeSelectorOpIn && len(values) == 1 && values[0] == node
	}
	for _, e := range t.MatchExpressions {
		if e.Key == corev1.LabelHostname && only(e.Operator, e.Values) {
			return true
		}
	}
	for _, f := range t.MatchFields {
		if f.Key == "metadata.name" && only(f.Operator, f.Values) {
			return true
		}
	}
	return false
}

// MemberVolume is the PV bound to a member's PVC (nil, nil when it has none or it is not bound).
func MemberVolume(ctx context.Context, c client.Reader, m *v1alpha2.EtcdMember) (*corev1.PersistentVolume, error) {
	pvc := &corev1.PersistentVolumeClaim{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: v1alpha2.PVCName(m.Name)}, pvc); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if pvc.Spec.VolumeName == "" {
		return nil, nil
	}
	pv := &corev1.PersistentVolume{}
	if err := c.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, pv); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	return pv, nil
}
