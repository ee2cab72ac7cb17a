package backoff

import (
	"testing"
	"time"
)

func TestDelay(t *testing.T) {
	want := []time.Duration{0, 10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second,
		160 * time.Second, 300 * time.Second, 300 * time.Second}
	for n, w := range want {
		if got := Delay(n); got != w {
			t.Errorf("Delay(%d) = %v, want %v", n, got, w)
		}
	}
}

func TestCounterResetsAfterLongRun(t *testing.T) {
	var c Counter
	steps := []struct {
		ran  time.Duration
		want time.Duration
	}{{time.Second, 0}, {time.Second, 10 * time.Second}, {time.Second, 20 * time.Second}, {11 * time.Minute, 0}, {time.Second, 10 * time.Second}}
	for i, s := range steps {
		if got := c.Next(s.ran); got != s.want {
			t.Errorf("step %d: Next(%v) = %v, want %v", i, s.ran, got, s.want)
		}
	}
}
