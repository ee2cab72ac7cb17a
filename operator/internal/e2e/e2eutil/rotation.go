//go:build e2e

package e2eutil

import (
	"bytes"
	"context"
	"testing"
	"time"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/pki"
	"github.com/cozystack/etcd-operator/operator/internal/resources"
	"github.com/cozystack/etcd-operator/operator/internal/trust"
)

// TriggerRenewal sets Issuing=True (reason ManuallyTriggered) on the Certificate's status, as
// cmctl renew does.
func TriggerRenewal(t *testing.T, c *framework.Cluster, ns, name string) {
	t.Helper()
	cert := &cmapi.Certificate{}
	if err := c.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, cert); err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	cond := cmapi.CertificateCondition{Type: cmapi.CertificateConditionIssuing, Status: cmmeta.ConditionTrue,
		Reason: "ManuallyTriggered", Message: "e2e: renewal forced as cmctl renew does", LastTransitionTime: &now,
		ObservedGeneration: cert.Generation}
	kept := cert.Status.Conditions[:0]
	for _, c := range cert.Status.Conditions {
		if c.Type != cmapi.CertificateConditionIssuing {
			kept = append(kept, c)
		}
	}
	cert.Status.Conditions = append(kept, cond)
	if err := c.Client.Status().Update(context.Background(), cert); err != nil {
		t.Fatalf("trigger renewal of %s: %v", name, err)
	}
}

// RotatedTo: the active Secrets serve leaves of ca and trust only ca, and every member's Pod is
// Ready with a trust bundle of ca alone.
func RotatedTo(t *testing.T, c *framework.Cluster, ns, cluster string, ca []byte) bool {
	want := trust.Merge(nil, ca)
	for _, name := range []string{v1alpha2.ActiveServerSecretName(cluster), v1alpha2.ActiveOperatorClientSecretName(cluster), v1alpha2.ActivePeerSecretName(cluster)} {
		s := SecretData(t, c, ns, name)
		if !bytes.Equal(s[pki.KeyCA], want) || !trust.Verifies(want, s[pki.KeyCert], time.Now()) {
			return false
		}
	}
	ms := Members(t, c, ns, cluster)
	for _, m := range ms {
		pod := Pod(t, c, ns, m.Name)
		if pod == nil || !pod.DeletionTimestamp.IsZero() || !PodReady(pod) {
			return false
		}
		for _, v := range pod.Spec.Volumes {
			if v.Name != resources.TrustVolume {
				continue
			}
			cm := &corev1.ConfigMap{}
			if err := c.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: v.ConfigMap.Name}, cm); err != nil {
				return false
			}
			if cm.Data[resources.TrustKeyClientCA] != string(want) || cm.Data[resources.TrustKeyPeerCA] != string(want) {
				return false
			}
		}
	}
	return GetCluster(t, c, ns, cluster).Status.Rollout == nil
}
