package agent

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/cozystack/etcd-operator/operator/internal/artifact"
	"github.com/cozystack/etcd-operator/operator/internal/snapshot"
)

// RestoreConfig is the restore agent's environment, read and checked.
type RestoreConfig struct {
	DataDir string
	// The new member, as etcdutl snapshot restore wants it.
	Name, InitialCluster, InitialClusterToken, InitialAdvertisePeerURLs string
	// Version is the target etcd's version; Etcdutl the target image's etcdutl.
	Version, Etcdutl string
	Source           string
	S3               snapshot.S3Config
	File             string
	// Checksum ("sha256:<hex>", lower case) is what the download must match; empty: anything.
	Checksum      string
	BumpRevision  uint64
	MarkCompacted bool
	// VerifyOnly: read the source through and check it; restore nothing.
	VerifyOnly     bool
	TerminationLog string
	// Keys decrypt an encrypted source (its identities; read from the mounted Secret).
	Keys artifact.Keyring
}

// Secrets are the values no message may contain.
func (c RestoreConfig) Secrets() []string {
	return append([]string{c.S3.SecretAccessKey, c.S3.AccessKeyID}, identityTexts(c.Keys)...)
}

// RestoreConfigFromEnv reads the contract's variables through getenv.
func RestoreConfigFromEnv(getenv func(string) string) (RestoreConfig, error) {
	c := RestoreConfig{
		DataDir: envOr(getenv, snapshot.EnvDataDir, snapshot.DefaultDataDir), Name: getenv(snapshot.EnvEtcdName),
		InitialCluster: getenv(snapshot.EnvEtcdInitialCluster), InitialClusterToken: getenv(snapshot.EnvEtcdInitialClusterToken),
		InitialAdvertisePeerURLs: getenv(snapshot.EnvEtcdInitialAdvertisePeer), Version: getenv(snapshot.EnvEtcdVersion),
		Etcdutl: envOr(getenv, snapshot.EnvEtcdutl, snapshot.DefaultEtcdutl), Source: getenv(snapshot.EnvRestoreSource),
		TerminationLog: envOr(getenv, snapshot.EnvTerminationLog, snapshot.DefaultTerminationLog),
	}
	var err error
	if c.VerifyOnly, err = parseBool(getenv, snapshot.EnvRestoreVerifyOnly); err != nil {
		return c, err
	}
	if !c.VerifyOnly {
		if err := c.readMember(); err != nil {
			return c, err
		}
	}
	if err := c.readOptions(getenv); err != nil {
		return c, err
	}
	if dir := getenv(snapshot.EnvEncryptionKeyDir); dir != "" {
		if c.Keys, err = snapshot.ReadKeyring(dir); err != nil {
			return c, err
		}
	}
	switch c.Source {
	case snapshot.DestS3:
		if c.S3, err = s3FromEnv(getenv); err != nil {
			return c, err
		}
		// The restore's reasons have no CredentialsMissing: missing keys are a plain failure.
		if err := c.S3.Validate(); err != nil {
			return c, errors.New(err.Error())
		}
		return c, nil
	case snapshot.DestPVC:
		c.File = getenv(snapshot.EnvRestoreFile)
		if c.File == "" || !filepath.IsAbs(c.File) {
			return c, fmt.Errorf("%s %q: want the absolute path of the snapshot file", snapshot.EnvRestoreFile, c.File)
		}
		return c, nil
	}
	return c, fmt.Errorf("%s %q: want %s or %s", snapshot.EnvRestoreSource, c.Source, snapshot.DestS3, snapshot.DestPVC)
}

func (c *RestoreConfig) readMember() error {
	if !filepath.IsAbs(c.DataDir) {
		return fmt.Errorf("%s %q: want an absolute path", snapshot.EnvDataDir, c.DataDir)
	}
	for name, v := range map[string]string{
		snapshot.EnvEtcdName: c.Name, snapshot.EnvEtcdInitialCluster: c.InitialCluster,
		snapshot.EnvEtcdInitialClusterToken: c.InitialClusterToken, snapshot.EnvEtcdInitialAdvertisePeer: c.InitialAdvertisePeerURLs,
	} {
		if v == "" {
			return fmt.Errorf("%s is empty", name)
		}
	}
	if _, err := parseMinor(c.Version); err != nil {
		return fmt.Errorf("%s: %w", snapshot.EnvEtcdVersion, err)
	}
	return nil
}

func (c *RestoreConfig) readOptions(getenv func(string) string) error {
	if sum := getenv(snapshot.EnvRestoreChecksum); sum != "" {
		var err error
		if c.Checksum, err = snapshot.ParseChecksum(sum); err != nil {
			return fmt.Errorf("%s: %w", snapshot.EnvRestoreChecksum, err)
		}
	}
	if v := getenv(snapshot.EnvRestoreBumpRevision); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return fmt.Errorf("%s %q: want a non-negative integer", snapshot.EnvRestoreBumpRevision, v)
		}
		c.BumpRevision = n
	}
	var err error
	if c.MarkCompacted, err = parseBool(getenv, snapshot.EnvRestoreMarkCompacted); err != nil {
		return err
	}
	// etcdutl refuses one without the other.
	if (c.BumpRevision > 0) != c.MarkCompacted {
		return fmt.Errorf("%s > 0 and %s=true go together (etcdutl requires --mark-compacted with --bump-revision and refuses it without)",
			snapshot.EnvRestoreBumpRevision, snapshot.EnvRestoreMarkCompacted)
	}
	return nil
}
