package localcluster

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// defaultStorageClass is the cluster's only StorageClass, served by the supervisor's provisioner.
// Immediate binding: hostPath PVs live on the one machine every node shares.
func defaultStorageClass() *storagev1.StorageClass {
	return &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{Name: StorageClassName,
			Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}},
		Provisioner:          Provisioner,
		ReclaimPolicy:        ptr.To(corev1.PersistentVolumeReclaimDelete),
		VolumeBindingMode:    ptr.To(storagev1.VolumeBindingImmediate),
		AllowVolumeExpansion: ptr.To(true),
	}
}

// dnsService is kube-system/kube-dns with ClusterIP DNSServiceIP, pointing (through a
// hand-made EndpointSlice) at CoreDNS on the gateway address.
func dnsService() (*corev1.Service, *discoveryv1.EndpointSlice) {
	ports := []corev1.ServicePort{
		{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53, TargetPort: intstr.FromInt32(53)},
		{Name: "dns-tcp", Protocol: corev1.ProtocolTCP, Port: 53, TargetPort: intstr.FromInt32(53)},
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-dns", Namespace: metav1.NamespaceSystem,
			Labels: map[string]string{"k8s-app": "kube-dns"}},
		Spec: corev1.ServiceSpec{ClusterIP: DNSServiceIP, Ports: ports},
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-dns-coredns", Namespace: metav1.NamespaceSystem,
			Labels: map[string]string{discoveryv1.LabelServiceName: "kube-dns",
				discoveryv1.LabelManagedBy: "localcluster"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{GatewayIP}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports: []discoveryv1.EndpointPort{
			{Name: ptr.To("dns"), Protocol: ptr.To(corev1.ProtocolUDP), Port: ptr.To[int32](53)},
			{Name: ptr.To("dns-tcp"), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To[int32](53)},
		},
	}
	return svc, slice
}

// bootstrapObjects creates the StorageClass and the DNS Service, then waits for the
// default ServiceAccount (Pods are refused by admission until it exists).
func (rc *runningCluster) bootstrapObjects(ctx context.Context) error {
	start := time.Now()
	if _, err := rc.kube.StorageV1().StorageClasses().Create(ctx, defaultStorageClass(), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create StorageClass: %w", err)
	}
	svc, slice := dnsService()
	if _, err := rc.kube.CoreV1().Services(svc.Namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create kube-dns Service: %w", err)
	}
	if _, err := rc.kube.DiscoveryV1().EndpointSlices(slice.Namespace).Create(ctx, slice, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create kube-dns EndpointSlice: %w", err)
	}
	err := poll(ctx, time.Minute, func() (bool, error) {
		_, err := rc.kube.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		return fmt.Errorf("default ServiceAccount: %w", err)
	}
	rc.phase("bootstrap objects + default ServiceAccount", start)
	return nil
}

// waitNodesReady waits until nodes 1..n exist and are Ready.
func (rc *runningCluster) waitNodesReady(ctx context.Context, idx []int) error {
	return poll(ctx, 2*time.Minute, func() (bool, error) {
		for _, i := range idx {
			if c := rc.nodeProcess(i); c != nil {
				if err := c.exitError(); err != nil {
					return false, err
				}
			}
			n, err := rc.kube.CoreV1().Nodes().Get(ctx, NodeName(rc.opts.Name, i), metav1.GetOptions{})
			if err != nil || !NodeReady(n) {
				return false, nil
			}
		}
		return true, nil
	})
}

// NodeReady reports the Node's Ready condition.
func NodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// nodeProcess is the process whose exit fails node i's readiness: its agent or its kubelet.
func (rc *runningCluster) nodeProcess(i int) *component {
	if n := rc.realNodes[i]; n != nil {
		return n.kubelet
	}
	return rc.nodes[i]
}
