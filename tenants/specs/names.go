// Package specs builds what the tenant controller creates for a TenantControlPlane: its
// EtcdCluster, the cert-manager PKI the cluster's certificates come from, and the Kamaji
// DataStore wired to both. Pure: one builder per kind, names in one place.
package specs

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

// Names are the names of everything made for one TenantControlPlane.
type Names struct {
	Namespace string // the TCP's, and of everything namespaced made for it
	TCP       string
	// Cluster is the EtcdCluster, <tcp>-etcd (shortened for a TCP name too long for it, over
	// 51 characters: such a cluster never worked under the full name); the PKI's names derive
	// from it.
	Cluster string
	// DataStore is cluster-scoped: <namespace>.<tcp> (a namespace has no dot, so it cannot collide).
	DataStore string
}

// NamesOf names what is made for the TCP namespace/name.
func NamesOf(namespace, tcp string) Names {
	return Names{Namespace: namespace, TCP: tcp, Cluster: v1alpha2.ShortName(tcp+"-etcd", v1alpha2.MaxClusterNameLength),
		DataStore: namespace + "." + tcp}
}

// SelfSignedIssuer signs only the CA.
func (n Names) SelfSignedIssuer() string { return n.Cluster + "-selfsigned" }

// CA is the CA Certificate, its Secret and the CA Issuer that signs every leaf of the tenant's
// etcd, and the client certificates Kamaji mints for the tenant.
func (n Names) CA() string { return n.Cluster + "-ca" }

// ClientCertificate is the root client Certificate (and Secret) the DataStore hands to Kamaji.
func (n Names) ClientCertificate() string { return n.Cluster + "-datastore-client" }

// BackupSchedule is the EtcdBackupSchedule of the tenant's etcd, when the backup template asks
// for one: <cluster>-backup, shortened when longer than a schedule's name may be (a TCP name
// over 42 characters).
func (n Names) BackupSchedule() string {
	return v1alpha2.ShortName(n.Cluster+"-backup", v1alpha2.MaxBackupScheduleNameLength)
}

// Check refuses names that cannot label what is made (label values are at most 63 characters).
func (n Names) Check() error {
	for _, v := range []string{n.TCP, n.DataStore} {
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			return fmt.Errorf("%q cannot be a label value (the DataStore is <namespace>.<name>, at most 63 characters): %s", v, errs[0])
		}
	}
	return nil
}
