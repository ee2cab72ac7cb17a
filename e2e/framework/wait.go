package framework

import (
	"testing"
	"time"
)

// WaitFor polls cond every 200 ms until it holds; at timeout it fails the test with what it
// waited for and cond's last error. The e2e packages under e2e/ share it; the product's suites
// use operator/internal/e2e/e2eutil's waits.
func WaitFor(tb testing.TB, timeout time.Duration, what string, cond func() (bool, error)) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	var lastErr error
	for {
		ok, err := cond()
		if ok {
			return
		}
		lastErr = err
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %s waiting for %s (last error: %v)", timeout, what, lastErr)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
