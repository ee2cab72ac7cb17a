package agent

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/cozystack/etcd-operator/operator/internal/snapshot"
)

// InstallToolsCommand is `manager install-tools <dir>`: it copies the running executable to
// <dir>/manager (mode 0755), for a later container of the Pod that runs another image.
func InstallToolsCommand(args []string, stderr io.Writer) int {
	if len(args) != 1 || args[0] == "" {
		fmt.Fprintf(stderr, "usage: manager %s <dir>\n", snapshot.CommandInstallTools)
		return 2
	}
	exe, err := os.Executable()
	if err == nil {
		err = InstallTools(exe, args[0])
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", snapshot.CommandInstallTools, err)
		return 1
	}
	return 0
}

// InstallTools copies the file exe to <dir>/manager through a temporary file, so the next
// container finds either nothing or the whole binary.
func InstallTools(exe, dir string) (err error) {
	src, err := os.Open(exe)
	if err != nil {
		return err
	}
	defer src.Close()
	dst := filepath.Join(dir, snapshot.ToolsBinary)
	tmp, err := os.CreateTemp(dir, "."+snapshot.ToolsBinary+"-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err = io.Copy(tmp, src); err == nil {
		err = tmp.Chmod(0o755)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dst)
}
