package metrics

import (
	"context"
	"crypto/x509"
	"encoding/pem"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

var certExpiryDesc = desc("cluster_certificate_expiry_timestamp_seconds",
	"notAfter of the leaf certificate the cluster's members serve (plane server or peer) or the operator presents to them (plane operator-client), Unix seconds, from the active TLS Secrets the members mount.", "plane")

// activeSecrets are the Secrets whose leaves are in use, by plane: the operator's active copies.
func activeSecrets(cluster string) map[string]string {
	return map[string]string{
		"server":          v1alpha2.ActiveServerSecretName(cluster),
		"peer":            v1alpha2.ActivePeerSecretName(cluster),
		"operator-client": v1alpha2.ActiveOperatorClientSecretName(cluster),
	}
}

// collectCertificates reports each plane's leaf notAfter; a plane without TLS (no Secret) or
// whose tls.crt holds no certificate has no series.
func collectCertificates(ctx context.Context, ch chan<- prometheus.Metric, r client.Reader, ec *v1alpha2.EtcdCluster) {
	for plane, name := range activeSecrets(ec.Name) {
		var s corev1.Secret
		if err := r.Get(ctx, client.ObjectKey{Namespace: ec.Namespace, Name: name}, &s); err != nil {
			continue
		}
		if leaf := firstCertificate(s.Data[corev1.TLSCertKey]); leaf != nil {
			gauge(ch, certExpiryDesc, float64(leaf.NotAfter.Unix()), ec.Namespace, ec.Name, plane)
		}
	}
}

// firstCertificate is the first certificate of a PEM chain (the leaf), or nil.
func firstCertificate(data []byte) *x509.Certificate {
	for block, rest := pem.Decode(data); block != nil; block, rest = pem.Decode(rest) {
		if block.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil
		}
		return cert
	}
	return nil
}
