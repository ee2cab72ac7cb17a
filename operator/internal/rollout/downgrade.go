package rollout

import (
	"fmt"
	"strings"
)

// DowngradePhase is where a one-minor downgrade stands, in the order of etcd's own procedure:
// validate and enable the downgrade (the cluster then speaks the older minor's protocol and
// every member migrates its storage to it), wait for every member's storage version, then
// restart members one at a time onto the older binary; etcd ends the downgrade by itself once
// every member runs it.
type DowngradePhase string

const (
	// DowngradeNone: no downgrade is wanted and none is enabled in etcd.
	DowngradeNone DowngradePhase = "None"
	// DowngradeEnable: spec.version is one minor below what members run; etcd's downgrade to it
	// is to be validated and enabled before any member restarts.
	DowngradeEnable DowngradePhase = "Enable"
	// DowngradeWaitStorage: enabled; a member's storage is not migrated to the target yet.
	DowngradeWaitStorage DowngradePhase = "WaitStorage"
	// DowngradeReady: enabled and every member's storage migrated: members may restart onto the
	// older binary (VersionSkew's downgradeReady).
	DowngradeReady DowngradePhase = "Ready"
	// DowngradeCancel: etcd has a downgrade enabled that spec.version no longer asks for (set back
	// up, or to another target): cancel it before members restart onto the newer binary.
	DowngradeCancel DowngradePhase = "Cancel"
)

// DowngradeFacts is what the decision reads: spec.version, and each running member's etcd
// version and what it reports of the downgrade and its storage.
type DowngradeFacts struct {
	Target  string
	Members []DowngradeMember
}

// DowngradeMember is one running member as its status reports it.
type DowngradeMember struct {
	Name    string
	Version string
	// StorageVersion is etcd's storage schema version (3.6+; "" from 3.5, which has none).
	StorageVersion string
	// Enabled and EnabledTarget: the cluster's downgrade as this member knows it (3.6+).
	Enabled       bool
	EnabledTarget string
}

// Downgrade is the next phase and the minor it is about ("3.5"), with a message for a wait.
type Downgrade struct {
	Phase   DowngradePhase
	Minor   string
	Message string
}

// DecideDowngrade is the downgrade's phase for facts; it is pure.
func DecideDowngrade(f DowngradeFacts) Downgrade {
	tMajor, tMinor, ok := majorMinor(f.Target)
	if !ok {
		return Downgrade{Phase: DowngradeNone}
	}
	want := fmt.Sprintf("%d.%d", tMajor, tMinor)
	enabled, enabledTo := enabledDowngrade(f.Members)
	if !downgradeWanted(tMajor, tMinor, f.Members) {
		// Enabled to the target itself with no member above it: the downgrade is done and etcd
		// ends it by itself.
		if enabled && enabledTo != want {
			return Downgrade{Phase: DowngradeCancel, Minor: enabledTo,
				Message: fmt.Sprintf("etcd has a downgrade to %s enabled that spec.version %s does not ask for", enabledTo, f.Target)}
		}
		return Downgrade{Phase: DowngradeNone}
	}
	if !enabled {
		return Downgrade{Phase: DowngradeEnable, Minor: want,
			Message: fmt.Sprintf("enabling etcd's downgrade to %s before any member restarts onto it", want)}
	}
	if enabledTo != want {
		return Downgrade{Phase: DowngradeCancel, Minor: enabledTo,
			Message: fmt.Sprintf("etcd has a downgrade to %s enabled, spec.version asks for %s", enabledTo, want)}
	}
	var pending []string
	for _, m := range f.Members {
		if minorOf(m.Version) != want && minorOf(m.StorageVersion) != want {
			pending = append(pending, m.Name)
		}
	}
	if len(pending) > 0 {
		return Downgrade{Phase: DowngradeWaitStorage, Minor: want,
			Message: fmt.Sprintf("downgrade to %s enabled; waiting for the storage of %s to be migrated to it", want, strings.Join(pending, ", "))}
	}
	return Downgrade{Phase: DowngradeReady, Minor: want}
}

// downgradeWanted: the target is exactly one minor below the highest minor a member runs.
func downgradeWanted(tMajor, tMinor int, ms []DowngradeMember) bool {
	top := -1
	for _, m := range ms {
		if major, minor, ok := majorMinor(m.Version); ok && major == tMajor && minor > top {
			top = minor
		}
	}
	return top == tMinor+1
}

// enabledDowngrade is the downgrade any member reports enabled, as a minor.
func enabledDowngrade(ms []DowngradeMember) (bool, string) {
	for _, m := range ms {
		if m.Enabled {
			return true, minorOf(m.EnabledTarget)
		}
	}
	return false, ""
}

// minorOf is "3.5" of "3.5.0" (or of "3.5"); "" when unparseable.
func minorOf(v string) string {
	major, minor, ok := majorMinor(v)
	if !ok {
		return ""
	}
	return fmt.Sprintf("%d.%d", major, minor)
}
