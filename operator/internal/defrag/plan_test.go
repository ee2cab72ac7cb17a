package defrag

import (
	"slices"
	"testing"
)

const mi = 1 << 20

func TestPlanOrder(t *testing.T) {
	ms := []Member{
		{Name: "c", Leader: true}, {Name: "b"}, {Name: "e", Learner: true}, {Name: "a"},
	}
	var order []string
	for _, s := range Plan(ms, Rule{All: true}) {
		order = append(order, s.Name)
	}
	if want := []string{"e", "a", "b", "c"}; !slices.Equal(order, want) {
		t.Errorf("order %v, want %v (learner, followers by name, leader last)", order, want)
	}
}

func TestPlanSelection(t *testing.T) {
	def := Rule{FreeSpaceAbove: DefaultFreeSpaceAbove}
	quota := Rule{FreeSpaceAbove: DefaultFreeSpaceAbove, QuotaUsageAbove: 80, MinReclaim: DefaultMinReclaim}
	for _, tc := range []struct {
		name   string
		m      Member
		r      Rule
		defrag bool
		reason string
	}{
		{"all takes an unfragmented member", Member{DBSize: 10 * mi, DBSizeInUse: 10 * mi}, Rule{All: true}, true, ReasonAll},
		{"above free space", Member{DBSize: 500 * mi, DBSizeInUse: 100 * mi}, def, true, ReasonFreeSpace},
		{"exactly the threshold is not above", Member{DBSize: 300 * mi, DBSizeInUse: 100 * mi}, def, false, ReasonBelowThreshold},
		{"below free space", Member{DBSize: 150 * mi, DBSizeInUse: 100 * mi}, def, false, ReasonBelowThreshold},
		{"quota pressure with enough to reclaim", Member{DBSize: 90 * mi, DBSizeInUse: 40 * mi, Quota: 100 * mi}, quota, true, ReasonQuotaPressure},
		{"quota pressure, too little to reclaim", Member{DBSize: 90 * mi, DBSizeInUse: 80 * mi, Quota: 100 * mi}, quota, false, ReasonBelowThreshold},
		{"below the quota share", Member{DBSize: 70 * mi, DBSizeInUse: 20 * mi, Quota: 100 * mi}, quota, false, ReasonBelowThreshold},
		{"unknown quota: free space only", Member{DBSize: 90 * mi, DBSizeInUse: 40 * mi}, quota, false, ReasonBelowThreshold},
		{"in use larger than size (racing status)", Member{DBSize: 10 * mi, DBSizeInUse: 11 * mi}, def, false, ReasonBelowThreshold},
	} {
		s := Plan([]Member{tc.m}, tc.r)[0]
		if s.Defragment != tc.defrag || s.Reason != tc.reason || s.Message == "" {
			t.Errorf("%s: defragment=%v reason=%s (%s), want %v %s", tc.name, s.Defragment, s.Reason, s.Message, tc.defrag, tc.reason)
		}
	}
}
