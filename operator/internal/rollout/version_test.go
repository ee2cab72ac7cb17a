package rollout

import "testing"

func TestVersionSkew(t *testing.T) {
	for _, tc := range []struct {
		target  string
		running []string
		ready   string
		skew    bool
	}{
		{"3.6.16", []string{"3.6.16", "3.6.15"}, "", false},
		{"3.6.16", []string{"3.5.21", "3.6.16"}, "", false}, // one minor up, half rolled
		{"3.7.3", []string{"3.6.16", "3.7.3"}, "", false},
		{"3.7.3", []string{"3.5.21", "3.6.16"}, "", true}, // two edits that skip 3.6 together
		{"3.6.16", []string{"3.7.3"}, "", true},           // a downgrade before etcd's is enabled
		{"3.6.16", []string{"3.7.3"}, "3.6", false},       // ... and once enabled with storage migrated
		{"3.6.16", []string{"3.7.3", "3.6.16"}, "3.6", false},
		{"3.5.35", []string{"3.7.3"}, "3.5", true}, // two minors down, whatever etcd says
		{"4.0.0", []string{"3.7.3"}, "", true},
		{"3.6.16", []string{"", "unknown"}, "", false}, // not yet observed
		{"garbage", []string{"3.5.0"}, "", false},
		{"3.10.0", []string{"3.9.4"}, "", false},
		{"3.10.0", []string{"3.8.4"}, "", true},
	} {
		if got := VersionSkew(tc.target, tc.running, tc.ready); (got != "") != tc.skew {
			t.Errorf("%s over %v: %q, want skew=%v", tc.target, tc.running, got, tc.skew)
		}
	}
}
