package specs

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Tenant etcds compact periodically and have a quota that fits their volume unless the
// template or the TCP's annotation says otherwise; what is filled is applied (Raw) and
// checked (Typed) alike.
func TestTenantDefaults(t *testing.T) {
	gi := int64(1 << 30)
	cases := []struct {
		name, template, override string
		mode, retention          string
		quota                    int64
	}{
		{"empty template: the API's default size", "", "", "periodic", "5m", gi * 95 / 100},
		{"quota from the template's size", "storage: {size: 4Gi}", "", "periodic", "5m", 4 * gi * 95 / 100},
		{"quota from the annotation's size", "storage: {size: 4Gi}", `{"storage": {"size": "8Gi"}}`, "periodic", "5m", 8 * gi * 95 / 100},
		{"the template's options win", "options: {autoCompactionMode: periodic, autoCompactionRetention: 1h, quotaBackendBytes: 1000}", "", "periodic", "1h", 1000},
		{"revision compaction keeps its own retention", "options: {autoCompactionMode: revision, autoCompactionRetention: '10000'}", "", "revision", "10000", gi * 95 / 100},
		{"revision compaction without retention gets none", "", `{"options": {"autoCompactionMode": "revision"}}`, "revision", "", gi * 95 / 100},
		{"options null", "options: null", "", "periodic", "5m", gi * 95 / 100},
		{"the annotation's quota wins", "", `{"options": {"quotaBackendBytes": 2048}}`, "periodic", "5m", 2048},
	}
	for _, tc := range cases {
		spec, err := Spec([]byte(tc.template), tc.override)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		o := spec.Typed.Options
		if o.AutoCompactionMode != tc.mode || o.AutoCompactionRetention != tc.retention || *o.QuotaBackendBytes != tc.quota {
			t.Errorf("%s: typed mode %q retention %q quota %d, want %q %q %d", tc.name, o.AutoCompactionMode, o.AutoCompactionRetention,
				*o.QuotaBackendBytes, tc.mode, tc.retention, tc.quota)
		}
		raw, _ := spec.Raw["options"].(map[string]any)
		if raw["autoCompactionMode"] != tc.mode || toInt(raw["quotaBackendBytes"]) != tc.quota || (tc.retention != "" && raw["autoCompactionRetention"] != tc.retention) {
			t.Errorf("%s: applied options %v", tc.name, raw)
		}
		if _, set := raw["autoCompactionRetention"]; tc.retention == "" && set {
			t.Errorf("%s: a retention filled for revision compaction: %v", tc.name, raw)
		}
	}
}

func toInt(v any) int64 {
	switch n := v.(type) {
	case int64:
		return n
	case float64:
		return int64(n)
	}
	return -1
}

func TestTenantQuota(t *testing.T) {
	for size, want := range map[string]int64{"1Gi": 1020054732, "4Gi": 4080218931, "0": 1020054732, "100Mi": 99614720} {
		if got := TenantQuota(resource.MustParse(size)); got != want {
			t.Errorf("quota of %s: %d, want %d", size, got, want)
		}
	}
}
