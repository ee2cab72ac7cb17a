package agent

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/cozystack/etcd-operator/operator/internal/pki"
	"github.com/cozystack/etcd-operator/operator/internal/snapshot"
)

// Files etcd's --peer-auto-tls reads from <data-dir>/fixtures/peer when they exist, instead of
// making a self-signed pair.
const (
	fixtureCert = "cert.pem"
	fixtureKey  = "key.pem"
)

// InstallPeerFixturesCommand is `manager install-peer-fixtures <tls-dir> <fixtures-dir>`: it
// copies tls.crt and tls.key of a mounted kubernetes.io/tls Secret to cert.pem and key.pem, so a
// member still on --peer-auto-tls presents that certificate instead of one it signed itself.
func InstallPeerFixturesCommand(args []string, stderr io.Writer) int {
	if len(args) != 2 || args[0] == "" || args[1] == "" {
		fmt.Fprintf(stderr, "usage: manager %s <tls-dir> <fixtures-dir>\n", snapshot.CommandInstallPeerFixtures)
		return 2
	}
	if err := InstallPeerFixtures(args[0], args[1]); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", snapshot.CommandInstallPeerFixtures, err)
		return 1
	}
	return 0
}

// InstallPeerFixtures writes the pair into dir (created 0700, as etcd wants its data dir), the
// key before the certificate and each through a temporary file, so etcd never finds a
// certificate without its key.
func InstallPeerFixtures(tlsDir, dir string) error {
	cert, err := os.ReadFile(filepath.Join(tlsDir, pki.KeyCert))
	if err != nil {
		return err
	}
	key, err := os.ReadFile(filepath.Join(tlsDir, pki.KeyKey))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(dir, fixtureKey), key); err != nil {
		return err
	}
	return writeAtomic(filepath.Join(dir, fixtureCert), cert)
}

func writeAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp.Name()) }() // gone after the rename; cleans up a failure
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
