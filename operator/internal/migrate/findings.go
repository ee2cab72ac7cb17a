// Package migrate is etcd-migrate's logic: it reads a cluster of the legacy etcd.aenix.io/v1alpha1
// operator and its live etcd (Inspect), translates them into this operator's EtcdCluster and
// EtcdMembers (Translate, pure), and adopts the running Pods and volumes in place (Apply): only
// objects, owner references, labels and annotations change; no Pod is restarted and no data moves.
package migrate

import (
	"fmt"
	"slices"
	"strings"
)

// Severity says whether a finding stops the adoption.
type Severity string

const (
	// Warning: the adoption goes on; something of the legacy cluster is dropped or changes.
	Warning Severity = "WARNING"
	// Blocker: adopting would be unsafe or impossible; nothing is touched.
	Blocker Severity = "BLOCKER"
)

// Finding is one thing the translation could not carry over as it is.
type Finding struct {
	Severity Severity
	// Field is the legacy field or object it is about (spec.options.foo, Pod kv-1).
	Field   string
	Message string
}

func (f Finding) String() string { return fmt.Sprintf("%s %s: %s", f.Severity, f.Field, f.Message) }

// Findings collects findings in the order they were made.
type Findings []Finding

func (fs *Findings) warn(field, format string, args ...any) {
	*fs = append(*fs, Finding{Severity: Warning, Field: field, Message: fmt.Sprintf(format, args...)})
}

func (fs *Findings) block(field, format string, args ...any) {
	*fs = append(*fs, Finding{Severity: Blocker, Field: field, Message: fmt.Sprintf(format, args...)})
}

// Blocked reports whether any finding is a blocker.
func (fs Findings) Blocked() bool {
	return slices.ContainsFunc(fs, func(f Finding) bool { return f.Severity == Blocker })
}

// Blockers is the blockers' text, one per line.
func (fs Findings) Blockers() string {
	var lines []string
	for _, f := range fs {
		if f.Severity == Blocker {
			lines = append(lines, f.String())
		}
	}
	return strings.Join(lines, "\n")
}
