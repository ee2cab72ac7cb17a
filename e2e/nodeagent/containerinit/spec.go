// Package containerinit is the last step of starting a container: running inside the pod's network
// namespace and a fresh private mount (and UTS) namespace, it mounts the pod's volumes and files,
// drops to the container's user and execs the container command, so the container's pid is the
// pid the agent started.
//
// Mount targets missing on the host are never created on the host. The deepest existing ancestor
// of such a target is "mimicked" inside the private mount namespace: a tmpfs is mounted over it and
// every original entry is bind-mounted back, so the container still sees the host's files there
// while the missing directories are created in the tmpfs. An ancestor of "/" is handled the same way
// on a new root (tmpfs + pivot_root).
package containerinit

import (
	"encoding/json"
	"fmt"
	"os"
)

// Subcommand is the hidden subcommand of the nodeagent binary that runs Main.
const Subcommand = "container-init"

// Mount is one mount of the container.
type Mount struct {
	Source   string `json:"source,omitempty"`
	Target   string `json:"target"`
	Tmpfs    bool   `json:"tmpfs,omitempty"`   // mount a fresh tmpfs instead of binding Source
	Options  string `json:"options,omitempty"` // tmpfs options, e.g. size=64m
	ReadOnly bool   `json:"readOnly,omitempty"`
}

// Spec is what container-init does, written by the agent as JSON (mode 0600: it holds the env).
type Spec struct {
	Argv       []string `json:"argv"`
	Env        []string `json:"env"`
	WorkingDir string   `json:"workingDir,omitempty"`
	Hostname   string   `json:"hostname,omitempty"`
	UID        int      `json:"uid"` // -1: stay root
	GID        int      `json:"gid"`
	Groups     []int    `json:"groups,omitempty"`
	Mounts     []Mount  `json:"mounts"`
	// ScratchDir is a private directory of the pod on the host used to stage mimicked directories.
	ScratchDir string `json:"scratchDir"`
}

// WriteSpec stores spec at path.
func WriteSpec(path string, spec Spec) error {
	data, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

// ReadSpec loads a spec written by WriteSpec.
func ReadSpec(path string) (Spec, error) {
	var spec Spec
	data, err := os.ReadFile(path)
	if err != nil {
		return spec, err
	}
	if err := json.Unmarshal(data, &spec); err != nil {
		return spec, fmt.Errorf("%s: %w", path, err)
	}
	return spec, nil
}
