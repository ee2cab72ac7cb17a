package rollout

import "testing"

func TestDecideDowngrade(t *testing.T) {
	m := func(name, version, storage string, enabledTo string) DowngradeMember {
		return DowngradeMember{Name: name, Version: version, StorageVersion: storage, Enabled: enabledTo != "", EnabledTarget: enabledTo}
	}
	for _, tc := range []struct {
		name    string
		target  string
		members []DowngradeMember
		want    DowngradePhase
		minor   string
	}{
		{"no change", "3.6.16", []DowngradeMember{m("a", "3.6.16", "3.6.0", ""), m("b", "3.6.16", "3.6.0", "")}, DowngradeNone, ""},
		{"upgrade is no downgrade", "3.7.3", []DowngradeMember{m("a", "3.6.16", "3.6.0", "")}, DowngradeNone, ""},
		{"patch down is no downgrade", "3.6.15", []DowngradeMember{m("a", "3.6.16", "3.6.0", "")}, DowngradeNone, ""},
		{"one minor down: enable first", "3.5.35", []DowngradeMember{m("a", "3.6.16", "3.6.0", ""), m("b", "3.6.16", "3.6.0", "")}, DowngradeEnable, "3.5"},
		{"3.7 to 3.6: enable", "3.6.16", []DowngradeMember{m("a", "3.7.3", "3.7.0", "")}, DowngradeEnable, "3.6"},
		{"two minors down is not decided here (VersionSkew refuses)", "3.5.35", []DowngradeMember{m("a", "3.7.3", "3.7.0", "")}, DowngradeNone, ""},
		{"enabled, a storage not migrated", "3.5.35", []DowngradeMember{m("a", "3.6.16", "3.5.0", "3.5.0"), m("b", "3.6.16", "3.6.0", "3.5.0")}, DowngradeWaitStorage, "3.5"},
		{"enabled, every storage migrated", "3.5.35", []DowngradeMember{m("a", "3.6.16", "3.5.0", "3.5.0"), m("b", "3.6.16", "3.5.0", "3.5.0")}, DowngradeReady, "3.5"},
		{"half rolled: a 3.5 member reports no storage version", "3.5.35", []DowngradeMember{m("a", "3.5.35", "", ""), m("b", "3.6.16", "3.5.0", "3.5.0")}, DowngradeReady, "3.5"},
		{"set back up mid-downgrade: cancel", "3.6.16", []DowngradeMember{m("a", "3.5.35", "", ""), m("b", "3.6.16", "3.5.0", "3.5.0")}, DowngradeCancel, "3.5"},
		{"set back up before any restart: cancel", "3.6.16", []DowngradeMember{m("a", "3.6.16", "3.5.0", "3.5.0")}, DowngradeCancel, "3.5"},
		{"enabled to another minor: cancel", "3.6.16", []DowngradeMember{m("a", "3.7.3", "3.7.0", "3.5.0")}, DowngradeCancel, "3.5"},
		{"done: every member on the target, etcd ends it", "3.5.35", []DowngradeMember{m("a", "3.5.35", "", ""), m("b", "3.5.35", "", "")}, DowngradeNone, ""},
		{"done but still reported enabled", "3.6.16", []DowngradeMember{m("a", "3.6.16", "3.6.0", "3.6.0")}, DowngradeNone, ""},
		{"unparseable target", "latest", []DowngradeMember{m("a", "3.6.16", "3.6.0", "")}, DowngradeNone, ""},
	} {
		got := DecideDowngrade(DowngradeFacts{Target: tc.target, Members: tc.members})
		if got.Phase != tc.want || got.Minor != tc.minor {
			t.Errorf("%s: %+v, want %s %q", tc.name, got, tc.want, tc.minor)
		}
	}
}
