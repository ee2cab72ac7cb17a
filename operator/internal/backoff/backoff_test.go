package backoff

import (
	"testing"
	"time"
)

func TestTracker(t *testing.T) {
	tr := New(500*time.Millisecond, 4*time.Second)
	want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second}
	for i, w := range want {
		if got := tr.Next("a"); got != w {
			t.Errorf("try %d: %v, want %v", i, got, w)
		}
	}
	if got := tr.Next("b"); got != 500*time.Millisecond {
		t.Errorf("keys are independent, got %v", got)
	}
	tr.Reset("a")
	if got := tr.Next("a"); got != 500*time.Millisecond {
		t.Errorf("after reset %v", got)
	}
}
