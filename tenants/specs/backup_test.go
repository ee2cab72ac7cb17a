package specs

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

const backupTemplate = `schedule: "0 */6 * * *"
snapshotTemplate:
  destination:
    s3: {endpoint: "http://s3:9000", bucket: tenants, key: etcd/, credentialsSecretRef: {name: s3}}
retention: {keepLast: 5}
`

func TestBackupSpec(t *testing.T) {
	cases := []struct {
		name, template, override string
		none                     bool // no schedule
		check                    func(v1alpha2.EtcdBackupScheduleSpec) bool
		err                      string
	}{
		{"no template, no override", "", "", true, nil, ""},
		{"an empty object is no template", "{}", "", true, nil, ""},
		{"template only", backupTemplate, "", false, func(s v1alpha2.EtcdBackupScheduleSpec) bool {
			return s.Schedule == "0 */6 * * *" && *s.Retention.KeepLast == 5 && s.SnapshotTemplate.Destination.S3.Bucket == "tenants"
		}, ""},
		{"override wins, the rest stays", backupTemplate, `{"retention": {"keepLast": 2}}`, false, func(s v1alpha2.EtcdBackupScheduleSpec) bool {
			return s.Schedule == "0 */6 * * *" && *s.Retention.KeepLast == 2
		}, ""},
		{"null turns backups off", backupTemplate, "null", true, nil, ""},
		{"an override alone backs up", "", "schedule: '@daily'\nsnapshotTemplate: {destination: {pvc: {claimName: backups}}}\n", false,
			func(s v1alpha2.EtcdBackupScheduleSpec) bool {
				return s.Schedule == "@daily" && s.SnapshotTemplate.Destination.PVC.ClaimName == "backups"
			}, ""},
		{"typo refused", backupTemplate, `{"schedul": "@daily"}`, false, nil, `unknown field "schedul"`},
		{"clusterRef refused", backupTemplate, `{"clusterRef": {"name": "other"}}`, false, nil, ErrClusterRefInBackup.Error()},
		{"not an object", backupTemplate, `[1]`, false, nil, "must be an object"},
		{"bad template", "schedule: [", "", false, nil, "the backup template is not YAML or JSON"},
	}
	for _, tc := range cases {
		got, err := BackupSpec([]byte(tc.template), tc.override)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.err)
		case tc.err != "":
		case err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.none != (got == nil):
			t.Errorf("%s: schedule %+v, want none: %v", tc.name, got, tc.none)
		case got != nil && !tc.check(got.Typed):
			t.Errorf("%s: got %+v", tc.name, got.Typed)
		}
	}
}

// Every tenant's artifacts go under its own namespace/name below the template's prefix, and the
// schedule backs up the tenant's own cluster; the template is not edited.
func TestBackupSchedule(t *testing.T) {
	n := NamesOf("tenant-a", "k8s")
	for _, tc := range []struct{ name, override, field, want string }{
		{"S3 key prefix", "", "s3.key", "etcd/tenant-a/k8s"},
		{"S3 without a prefix", `{"snapshotTemplate": {"destination": {"s3": {"key": null}}}}`, "s3.key", "tenant-a/k8s"},
		{"PVC subPath", `{"snapshotTemplate": {"destination": {"s3": null, "pvc": {"claimName": "b", "subPath": "snaps"}}}}`, "pvc.subPath", "snaps/tenant-a/k8s"},
	} {
		spec, err := BackupSpec([]byte(backupTemplate), tc.override)
		if err != nil {
			t.Fatal(err)
		}
		u := BackupSchedule(n, spec)
		path := append([]string{"spec", "snapshotTemplate", "destination"}, strings.Split(tc.field, ".")...)
		if got, _, _ := unstructured.NestedString(u.Object, path...); got != tc.want {
			t.Errorf("%s: %s = %q, want %q", tc.name, tc.field, got, tc.want)
		}
		if got, _, _ := unstructured.NestedString(u.Object, "spec", "clusterRef", "name"); got != n.Cluster {
			t.Errorf("%s: clusterRef %q", tc.name, got)
		}
		if u.GetName() != "k8s-etcd-backup" || u.GetNamespace() != "tenant-a" || u.GetLabels()[v1alpha2.LabelTenantName] != "k8s" {
			t.Errorf("%s: metadata %s/%s %v", tc.name, u.GetNamespace(), u.GetName(), u.GetLabels())
		}
		if _, ok := spec.Raw["clusterRef"]; ok {
			t.Errorf("%s: the builder edited its input", tc.name)
		}
	}
}
