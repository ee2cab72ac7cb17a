package etcddefrag

import (
	"strconv"
	"strings"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/defrag"
)

// ruleOf is the spec's rule with the public API's defaults: absent or empty is freeSpaceAbove
// 200Mi; minReclaim defaults to 32Mi.
func ruleOf(r *v1alpha2.DefragRule) defrag.Rule {
	out := defrag.Rule{FreeSpaceAbove: defrag.DefaultFreeSpaceAbove, MinReclaim: defrag.DefaultMinReclaim}
	if r == nil {
		return out
	}
	out.All = r.All
	if r.FreeSpaceAbove != nil {
		out.FreeSpaceAbove = r.FreeSpaceAbove.Value()
	}
	if r.MinReclaim != nil {
		out.MinReclaim = r.MinReclaim.Value()
	}
	if p, err := strconv.Atoi(strings.TrimSuffix(r.QuotaUsageAbove, "%")); err == nil {
		out.QuotaUsageAbove = p
	}
	return out
}
