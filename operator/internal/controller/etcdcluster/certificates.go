package etcdcluster

import (
	"context"
	"fmt"
	"maps"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/pki"
	"github.com/cozystack/etcd-operator/operator/internal/resources"
)

// +kubebuilder:rbac:groups=cert-manager.io,resources=certificates,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch

// ensureCertificates creates the cert-manager Certificates of the cluster's certManager planes
// and updates them when the names, issuers or certificate template they should carry change;
// cert-manager re-issues an updated Certificate. Without cert-manager's
// CRD the pass goes on (a cluster with BYO planes, or one waiting for cert-manager to be
// installed, is still reported) and status says why no certificate will come.
func (r *Reconciler) ensureCertificates(ctx context.Context, st *clusterState) error {
	st.certManagerMissing = false
	for _, want := range resources.DesiredCertificates(st.cluster, r.clusterDomain()) {
		err := r.ensureCertificate(ctx, st.cluster, want)
		if meta.IsNoMatchError(err) {
			st.certManagerMissing = true
			// One Event when the cluster enters the state, not one per pass.
			if st.memo.due(st.cluster, topicCertManager, v1alpha2.ReasonCertManagerNotInstalled) {
				r.event(st.cluster, corev1.EventTypeWarning, v1alpha2.ReasonCertManagerNotInstalled, "CreateCertificate",
					"spec.tls asks for cert-manager Certificates, but the %s CRD is not installed: %v", certificateCRD, err)
			}
			return nil
		}
		if err != nil {
			return err
		}
	}
	st.memo.resolved(topicCertManager)
	return nil
}

const certificateCRD = "certificates.cert-manager.io"

func (r *Reconciler) ensureCertificate(ctx context.Context, c *v1alpha2.EtcdCluster, want *cmapi.Certificate) error {
	got := &cmapi.Certificate{}
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(want), got)
	switch {
	case apierrors.IsNotFound(err):
		if err := r.Client.Create(ctx, want); err != nil {
			return err
		}
		r.event(c, corev1.EventTypeNormal, "CertificateCreated", "CreateCertificate", "created Certificate %s (Secret %s, issuer %s %s)",
			want.Name, want.Spec.SecretName, want.Spec.IssuerRef.Kind, want.Spec.IssuerRef.Name)
		return nil
	case err != nil:
		return err
	case !metav1.IsControlledBy(got, c):
		return fmt.Errorf("cert-manager Certificate %s exists but is not controlled by EtcdCluster uid %s", got.Name, c.UID)
	case !resources.NeedsUpdate(got, want):
		return nil
	}
	got.Spec = want.Spec
	if got.Labels == nil {
		got.Labels = map[string]string{}
	}
	maps.Copy(got.Labels, want.Labels)
	if err := r.Client.Update(ctx, got); err != nil {
		return err
	}
	r.event(c, corev1.EventTypeNormal, "CertificateUpdated", "UpdateCertificate", "updated Certificate %s to the cluster's current names, issuer and certificate template", got.Name)
	return nil
}

func (r *Reconciler) clusterDomain() string {
	if r.ClusterDomain == "" {
		return pki.DefaultClusterDomain
	}
	return r.ClusterDomain
}
