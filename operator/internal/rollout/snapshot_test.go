package rollout

import "testing"

func TestSnapshotWait(t *testing.T) {
	up := Since{Minor: "3.6", RaftIndex: 5000, Upgraded: true}
	for _, tc := range []struct {
		name   string
		target string
		since  Since
		index  int64
		wait   bool
	}{
		{"right after 3.5 → 3.6", "3.7.3", up, 5100, true},
		{"one entry short", "3.7.3", up, 15000, true},
		{"every member snapshotted", "3.7.3", up, 15001, false},
		{"a patch of the same minor", "3.6.17", up, 5100, false},
		{"bootstrapped on 3.6: no older entries", "3.7.3", Since{Minor: "3.6", RaftIndex: 10, Upgraded: false}, 20, false},
		{"unparseable", "garbage", up, 0, false},
	} {
		got := SnapshotWait(tc.target, tc.since, tc.index, 10000)
		if (got != "") != tc.wait {
			t.Errorf("%s: %q, want wait=%v", tc.name, got, tc.wait)
		}
	}
	if DefaultSnapshotCount("3.5") != 100000 || DefaultSnapshotCount("3.6") != 10000 || DefaultSnapshotCount("3.7") != 10000 {
		t.Error("default snapshot counts")
	}
}
