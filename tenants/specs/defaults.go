package specs

import (
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

// The etcd options every tenant etcd gets where its template and annotation leave them unset.
// Kamaji starts each tenant kube-apiserver with --etcd-compaction-interval=0, so nothing but
// etcd itself compacts a tenant's history: without periodic compaction it grows into the quota
// and etcd refuses writes (NOSPACE). Every 5 minutes, as Kamaji's own etcd chart and
// Cozystack's etcd app do. The quota is 0.95 × the volume, as in Cozystack's app, so etcd
// raises its alarm before the volume fills (etcd's own default, 2 GiB, is above the 1Gi default
// volume).
const (
	TenantCompactionMode      = "periodic"
	TenantCompactionRetention = "5m"
	TenantQuotaFraction       = 0.95
)

// withTenantDefaults fills the tenant options the spec leaves unset, in Raw (what is applied)
// and Typed alike. A retention is only filled for periodic compaction: a revision count is the
// user's to choose. The quota follows storage.size (the API's default size when unset), so it
// grows with the volume.
func withTenantDefaults(spec *ClusterSpec) {
	opts, _ := spec.Raw["options"].(map[string]any)
	if opts == nil {
		opts = map[string]any{}
	}
	if spec.Typed.Options == nil {
		spec.Typed.Options = &v1alpha2.EtcdOptions{}
	}
	typed := spec.Typed.Options
	if typed.AutoCompactionMode == "" {
		typed.AutoCompactionMode = TenantCompactionMode
		opts["autoCompactionMode"] = TenantCompactionMode
	}
	if typed.AutoCompactionRetention == "" && typed.AutoCompactionMode == TenantCompactionMode {
		typed.AutoCompactionRetention = TenantCompactionRetention
		opts["autoCompactionRetention"] = TenantCompactionRetention
	}
	if typed.QuotaBackendBytes == nil {
		quota := TenantQuota(spec.Typed.Storage.Size)
		typed.QuotaBackendBytes = &quota
		opts["quotaBackendBytes"] = quota
	}
	spec.Raw["options"] = opts
}

// TenantQuota is floor(0.95 × size) in bytes; a zero size is the API's default size.
func TenantQuota(size resource.Quantity) int64 {
	if size.IsZero() {
		size = resource.MustParse(v1alpha2.DefaultStorageSize)
	}
	return int64(float64(size.Value()) * TenantQuotaFraction)
}
