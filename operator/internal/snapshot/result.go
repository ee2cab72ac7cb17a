package snapshot

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"
)

// FormatTime renders a result time: RFC 3339 in UTC, to the nanosecond (durations of a snapshot
// are often below a second).
func FormatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// FormatID renders an etcd member or cluster ID as 16 hex digits, as etcdctl does.
func FormatID(id uint64) string { return fmt.Sprintf("%016x", id) }

// Failed is the result line of a failure: the reason err carries and its message.
func Failed(err error) (Reason, string) { return ReasonOf(err), err.Error() }

// EncodeSnapshot is the snapshot result as one JSON line of at most MaxResultBytes, the
// message shortened when needed.
func EncodeSnapshot(r SnapshotResult) []byte {
	return encodeBounded(r.Message, func(msg string) any { r.Message = msg; return r })
}

// EncodeRestore is the restore result as one JSON line of at most MaxResultBytes.
func EncodeRestore(r RestoreResult) []byte {
	return encodeBounded(r.Message, func(msg string) any { r.Message = msg; return r })
}

// ellipsis marks a shortened message.
const ellipsis = "…"

// encodeBounded marshals with(msg), cutting msg (on a rune boundary, marked with an ellipsis)
// to the longest prefix whose line, newline included, fits MaxResultBytes.
func encodeBounded(msg string, with func(string) any) []byte {
	line := func(m string) []byte {
		b, err := json.Marshal(with(m))
		if err != nil { // the result types hold only strings and numbers
			panic(err)
		}
		return append(b, '\n')
	}
	if b := line(msg); len(b) <= MaxResultBytes {
		return b
	}
	var cuts []int // rune boundaries: the prefixes a cut may keep
	for i := range msg {
		cuts = append(cuts, i)
	}
	// The longest fitting prefix: cuts[lo] always fits (the empty prefix does).
	lo, hi := 0, len(cuts)-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if len(line(msg[:cuts[mid]]+ellipsis)) <= MaxResultBytes {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return line(msg[:cuts[lo]] + ellipsis)
}

// DecodeTerminated decodes an agent's result line, its container's termination message, into v
// (a *SnapshotResult or *RestoreResult) whose phase phase reports. An error says why the line
// cannot be believed: missing or malformed, or claiming anything but a failure from a container
// that exited non-zero; its text is what the controller reports instead.
func DecodeTerminated(message string, exitCode int32, v any, phase func() Phase) error {
	if err := json.Unmarshal([]byte(strings.TrimSpace(message)), v); err == nil && phase() != "" {
		if exitCode != 0 && phase() != PhaseFailed {
			return fmt.Errorf("the agent reported %s but exited with code %d", phase(), exitCode)
		}
		return nil
	}
	msg := strings.TrimSpace(message)
	if msg == "" {
		msg = "no result"
	}
	return fmt.Errorf("the agent exited with code %d: %s", exitCode, msg)
}

// ParseSnapshot reads a snapshot agent's result line (a Pod's termination message).
func ParseSnapshot(line string) (SnapshotResult, error) {
	var r SnapshotResult
	if err := json.Unmarshal([]byte(strings.TrimSpace(line)), &r); err != nil {
		return r, fmt.Errorf("snapshot agent result: %w", err)
	}
	if r.Phase != PhaseComplete && r.Phase != PhaseFailed {
		return r, fmt.Errorf("snapshot agent result: unknown phase %q", r.Phase)
	}
	return r, nil
}

// ParseRestore reads a restore agent's result line.
func ParseRestore(line string) (RestoreResult, error) {
	var r RestoreResult
	if err := json.Unmarshal([]byte(strings.TrimSpace(line)), &r); err != nil {
		return r, fmt.Errorf("restore agent result: %w", err)
	}
	switch r.Phase {
	case PhaseRestored, PhaseSkipped, PhaseVerified, PhaseFailed:
		return r, nil
	}
	return r, fmt.Errorf("restore agent result: unknown phase %q", r.Phase)
}

// Redactor replaces secrets in text that leaves the process (results, logs).
type Redactor struct{ secrets []string }

// redacted stands in for a secret.
const redacted = "[redacted]"

// NewRedactor redacts the given non-empty secrets, however short (a short one garbles messages
// rather than leak).
func NewRedactor(secrets ...string) *Redactor {
	r := &Redactor{}
	for _, s := range secrets {
		if s != "" {
			r.secrets = append(r.secrets, s)
		}
	}
	// Longest first: a secret inside another must not leave the rest of the longer one.
	sort.Slice(r.secrets, func(i, j int) bool { return len(r.secrets[i]) > len(r.secrets[j]) })
	return r
}

// Clean returns s with every secret replaced.
func (r *Redactor) Clean(s string) string {
	if r == nil {
		return s
	}
	for _, secret := range r.secrets {
		s = strings.ReplaceAll(s, secret, redacted)
	}
	return s
}
