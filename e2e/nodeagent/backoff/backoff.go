// Package backoff holds the kubelet's container restart back-off: the first restart is immediate,
// then 10 s doubling up to 5 min; a container that ran long enough resets it.
package backoff

import "time"

const (
	Initial = 10 * time.Second
	Max     = 5 * time.Minute
	// ResetAfter is how long a container must run for its next crash to count as the first again.
	ResetAfter = 10 * time.Minute
)

// Delay is the wait before restart number n+1 of a container that has crashed n+1 times in a row
// (n = 0: restart at once).
func Delay(n int) time.Duration {
	if n <= 0 {
		return 0
	}
	d := Initial
	for i := 1; i < n; i++ {
		d *= 2
		if d >= Max {
			return Max
		}
	}
	return d
}

// Counter tracks consecutive crashes of one container.
type Counter struct{ crashes int }

// Next records a crash after the container ran for ranFor and returns how long to wait.
func (c *Counter) Next(ranFor time.Duration) time.Duration {
	if ranFor >= ResetAfter {
		c.crashes = 0
	}
	d := Delay(c.crashes)
	c.crashes++
	return d
}
