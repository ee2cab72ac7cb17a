package controller

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	kamaji "github.com/cozystack/etcd-operator/tenants/api/kamaji/v1alpha1"
	"github.com/cozystack/etcd-operator/tenants/specs"
)

// The longest TCP name the DataStore's name admits is served: its EtcdCluster and backup schedule
// get the shortened names the API accepts (<tcp>-etcd and <tcp>-etcd-backup would be refused),
// and the TCP's annotation names the cluster. One character more is refused with NameTooLong.
func (s *suite) testLongNames(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "l-"}}
	if err := s.c.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	longest := "t" + strings.Repeat("x", 63-len(ns.Name)-2) // <ns>.<tcp> is 63 characters
	n := specs.NamesOf(ns.Name, longest)
	if n.Check() != nil || len(n.Cluster) > v1alpha2.MaxClusterNameLength || n.Cluster == longest+"-etcd" {
		t.Fatalf("names %+v: want a TCP the check admits whose cluster name is shortened", n)
	}
	s.tcp(t, ns.Name, longest, optIn, "")
	tcp := &kamaji.TenantControlPlane{}
	waitFor(t, "the longest TCP name served, its annotation naming the shortened cluster "+n.Cluster, func() bool {
		return s.get(t, client.ObjectKey{Namespace: ns.Name, Name: longest}, tcp) && tcp.Spec.DataStore == n.DataStore &&
			tcp.Annotations[v1alpha2.AnnotationTenantEtcdCluster] == n.Cluster
	})
	if !s.get(t, client.ObjectKey{Namespace: ns.Name, Name: n.Cluster}, &v1alpha2.EtcdCluster{}) {
		t.Errorf("no EtcdCluster %s", n.Cluster)
	}
	waitFor(t, "the backup schedule "+n.BackupSchedule(), func() bool {
		return s.get(t, client.ObjectKey{Namespace: ns.Name, Name: n.BackupSchedule()}, &v1alpha2.EtcdBackupSchedule{})
	})
	ds := &kamaji.DataStore{}
	if !s.get(t, client.ObjectKey{Name: n.DataStore}, ds) || ds.Spec.Endpoints[0] != n.Cluster+"-client."+ns.Name+".svc:2379" {
		t.Errorf("DataStore %+v", ds.Spec)
	}

	tooLong := longest + "x"
	s.tcp(t, ns.Name, tooLong, optIn, "")
	waitFor(t, "NameTooLong", func() bool {
		return s.get(t, client.ObjectKey{Namespace: ns.Name, Name: tooLong}, tcp) &&
			strings.Contains(tcp.Annotations[v1alpha2.AnnotationTenantEtcdState], v1alpha2.ReasonTenantNameTooLong)
	})
	if s.get(t, client.ObjectKey{Namespace: ns.Name, Name: specs.NamesOf(ns.Name, tooLong).Cluster}, &v1alpha2.EtcdCluster{}) {
		t.Error("an EtcdCluster was made for a TCP refused with NameTooLong")
	}
}
