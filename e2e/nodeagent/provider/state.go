package provider

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// savedPod is what survives an agent restart: enough to re-adopt running processes.
type savedPod struct {
	UID        string                    `json:"uid"`
	IP         string                    `json:"ip"`
	InitDone   bool                      `json:"initDone"`
	Containers map[string]savedContainer `json:"containers"`
	// InitBoot is the node boot in which init containers last finished: after a reboot they run
	// again, as in the kubelet's new sandbox. Empty (an older agent's state) counts as this boot.
	InitBoot string `json:"initBoot,omitempty"`
	// Terminal is set once the pod ended for good (a graceful node shutdown).
	Terminal *savedTerminal `json:"terminal,omitempty"`
}

type savedContainer struct {
	PID          int       `json:"pid"`
	StartTime    uint64    `json:"startTime"`
	Started      time.Time `json:"started"`
	RestartCount int32     `json:"restartCount"`
	LogStart     int64     `json:"logStart"`
	PrevLogStart int64     `json:"prevLogStart"`
	Ran          bool      `json:"ran"` // started at least once: the next start is a restart
	// Finished is set once a container will not be restarted any more; Terminated is then how
	// it ended (with its termination message).
	Finished   *int                             `json:"finished,omitempty"`
	Terminated *corev1.ContainerStateTerminated `json:"terminated,omitempty"`
	// LastTerminated is the end of the run before the current one (lastState).
	LastTerminated *corev1.ContainerStateTerminated `json:"lastTerminated,omitempty"`
}

// initFromEarlierBoot reports whether the init containers finished before the node's boot: the
// saved run is void then. A pod that ended for good is only reported, never run again.
func (s *savedPod) initFromEarlierBoot(boot string) bool {
	return s.Terminal == nil && s.InitBoot != "" && boot != "" && s.InitBoot != boot
}

func statePath(podDir string) string { return filepath.Join(podDir, "state.json") }

func loadState(podDir string) (*savedPod, error) {
	data, err := os.ReadFile(statePath(podDir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var s savedPod
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

func saveState(podDir string, s *savedPod) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp := statePath(podDir) + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, statePath(podDir))
}

// writePIDFile publishes the container's pid for the harness's fault injection.
func writePIDFile(podDir, container string, pid int) error {
	p := filepath.Join(podDir, container+".pid")
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}
