package specs

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/cozystack/etcd-operator/internal/namecheck"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

// TestTenantNamesFitTheirLimits derives everything the tenant controller makes for a TCP, through
// its builders, for every TCP name Names.Check admits (Kamaji's API caps a TCP's name only as a
// DNS subdomain) in the shortest and the longest namespace, and checks each name and label
// value against its kind's limit, the EtcdCluster's and EtcdBackupSchedule's CRD caps included.
// The operator's own names derived from the EtcdCluster are checked at that CRD's cap by the
// operator's test (resources.TestDerivedNamesFitTheirLimits). A TCP the check admits must never
// give an object the API refuses; a TCP it refuses gets NameTooLong with the reason.
func TestTenantNamesFitTheirLimits(t *testing.T) {
	backup := &ClusterBackup{Raw: map[string]any{"schedule": "@hourly"}}
	admitted := 0
	var tally namecheck.Tally
	for _, ns := range []string{"n", "n" + strings.Repeat("s", validation.DNS1123LabelMaxLength-1)} {
		for l := 1; l <= validation.DNS1123SubdomainMaxLength; l++ {
			n := NamesOf(ns, "t"+strings.Repeat("x", l-1))
			if n.Check() != nil {
				continue
			}
			admitted++
			cluster, err := EtcdCluster(n, ClusterSpec{}, "Delete")
			if err != nil {
				t.Fatal(err)
			}
			objs := []runtime.Object{cluster, BackupSchedule(n, backup), DataStore(n)}
			for _, o := range PKI(n, CAKey(nil)) {
				objs = append(objs, o.(runtime.Object))
			}
			for _, o := range objs {
				u := toUnstructured(t, o)
				for _, f := range namecheck.Object(fmt.Sprintf("tenant objects in a namespace of %d characters", len(ns)), u.GetKind(), u) {
					tally.Add("TCP", len(n.TCP), f)
				}
			}
			// The operator's Services of the cluster: the DataStore's endpoint is the client one.
			for _, svc := range []string{v1alpha2.HeadlessServiceName(n.Cluster, nil), v1alpha2.ClientServiceName(n.Cluster, nil)} {
				where := fmt.Sprintf("the operator's Service of the tenant's EtcdCluster, namespace of %d characters", len(ns))
				for _, f := range namecheck.Object(where, "Service", named(svc)) {
					tally.Add("TCP", len(n.TCP), f)
				}
			}
		}
	}
	for _, line := range tally.Lines() {
		t.Error(line)
	}
	if admitted == 0 {
		t.Fatal("Names.Check admitted no TCP name at all")
	}
}

func named(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": name}}}
}

func toUnstructured(t *testing.T, o runtime.Object) *unstructured.Unstructured {
	t.Helper()
	if u, ok := o.(*unstructured.Unstructured); ok {
		return u
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}
