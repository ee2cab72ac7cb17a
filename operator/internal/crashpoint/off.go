//go:build !crashpoint

package crashpoint

// Enabled reports whether this build can stop at a crash point (built with -tags crashpoint).
const Enabled = false

// Hit does nothing in a normal build.
func Hit(string) {}
