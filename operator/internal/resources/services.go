package resources

import (
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/membership"
)

func servicePort(name string, port int32) corev1.ServicePort {
	return corev1.ServicePort{Name: name, Port: port, TargetPort: intstr.FromInt32(port), Protocol: corev1.ProtocolTCP}
}

// HeadlessService gives every member Pod, ready or not, a DNS name for peers and the operator.
func HeadlessService(c *v1alpha2.EtcdCluster) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: ClusterObjectMeta(c, v1alpha2.HeadlessServiceName(c.Name, c.Spec.Layout), ""),
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			PublishNotReadyAddresses: true,
			Selector:                 ClusterSelector(c.Name),
			Ports:                    []corev1.ServicePort{servicePort("client", v1alpha2.ClientPort), servicePort("peer", v1alpha2.PeerPort)},
		},
	}
}

// ClientService is the application endpoint on 2379.
func ClientService(c *v1alpha2.EtcdCluster) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: ClusterObjectMeta(c, v1alpha2.ClientServiceName(c.Name, c.Spec.Layout), ""),
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: ClusterSelector(c.Name),
			Ports:    []corev1.ServicePort{servicePort("client", v1alpha2.ClientPort)},
		},
	}
}

// MinAvailable is the PDB budget: the quorum of the larger of live voters and the target, so a
// cluster growing toward its target is already protected at the target's quorum.
func MinAvailable(liveVoters, desired int32) int32 {
	return int32(membership.Quorum(int(max(liveVoters, desired))))
}

// PodDisruptionBudget protects voters' quorum from voluntary evictions. It is nil when there are
// no voters (before bootstrap, paused), and the controller deletes it then.
func PodDisruptionBudget(c *v1alpha2.EtcdCluster, liveVoters int32) *policyv1.PodDisruptionBudget {
	if liveVoters == 0 || !c.PodDisruptionBudgetEnabled() {
		return nil
	}
	minAvailable := intstr.FromInt32(MinAvailable(liveVoters, DesiredReplicas(c)))
	selector := ClusterSelector(c.Name)
	selector[v1alpha2.LabelRole] = v1alpha2.RoleVoter
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: ClusterObjectMeta(c, v1alpha2.PDBName(c.Name), ""),
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: &minAvailable,
			Selector:     &metav1.LabelSelector{MatchLabels: selector},
		},
	}
}
