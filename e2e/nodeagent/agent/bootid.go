package agent

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/util/uuid"
)

// The node's boot ID (Node status.nodeInfo.bootID, which a kubelet reads from the kernel) lasts
// as long as what a machine's reboot wipes: the agent's pods and their memory-backed volumes.
// An agent that stops its pods (a machine going down) or shuts the node down takes a new one at
// its next start; one that only crashed (its pods kept running) keeps it.
const bootIDFile = "boot_id"

// loadBootID returns the node's boot ID, making one when the last stop ended the boot.
func loadBootID(stateDir string) (string, error) {
	path := filepath.Join(stateDir, bootIDFile)
	b, err := os.ReadFile(path)
	if err == nil && len(strings.TrimSpace(string(b))) > 0 {
		return strings.TrimSpace(string(b)), nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	id := string(uuid.NewUUID())
	return id, os.WriteFile(path, []byte(id+"\n"), 0o644)
}

// endBoot: the pods and their tmpfs are gone; the next start is a new boot.
func endBoot(stateDir string) error {
	if err := os.Remove(filepath.Join(stateDir, bootIDFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
