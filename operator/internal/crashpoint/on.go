//go:build crashpoint

package crashpoint

import (
	"fmt"
	"os"
	"sync"
)

// Enabled reports whether this build can stop at a crash point (built with -tags crashpoint).
const Enabled = true

var (
	mu      sync.Mutex
	trigger *Trigger
)

// init reads EnvVar once; a bad value stops the process at start rather than never firing.
func init() {
	s, err := Parse(os.Getenv(EnvVar))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	trigger = NewTrigger(s)
}

// Hit stops the process at once, with ExitCode and no cleanup, when name is the armed step.
// Workers hit concurrently; the lock keeps the count exact and the exit single.
func Hit(name string) {
	mu.Lock()
	defer mu.Unlock()
	if trigger.Fire(name) {
		fmt.Fprintf(os.Stderr, "crashpoint %s hit\n", name)
		os.Exit(ExitCode)
	}
}
