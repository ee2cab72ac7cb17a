// Package backoff spaces out retries of etcd calls that fail for a while by design (a fresh
// cluster refuses reconfiguration for ~5 s; a new learner cannot be promoted until in sync).
package backoff

import (
	"sync"
	"time"
)

// Tracker keeps an exponential delay per key; Reset clears it after progress.
type Tracker struct {
	Base, Max time.Duration
	mu        sync.Mutex
	attempts  map[string]int
}

// New returns a tracker that starts at base and doubles up to max.
func New(base, max time.Duration) *Tracker {
	return &Tracker{Base: base, Max: max, attempts: map[string]int{}}
}

// Next returns the delay before the next try of key and counts the try.
func (t *Tracker) Next(key string) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := t.attempts[key]
	t.attempts[key] = n + 1
	d := t.Base
	for i := 0; i < n && d < t.Max; i++ {
		d *= 2
	}
	return min(d, t.Max)
}

// Reset forgets key's failures.
func (t *Tracker) Reset(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.attempts, key)
}
