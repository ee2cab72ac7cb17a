package agent

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/artifact"
	"github.com/cozystack/etcd-operator/operator/internal/etcdaccess"
	"github.com/cozystack/etcd-operator/operator/internal/snapshot"
)

// defaultStallTimeout ends a snapshot stream that delivers nothing for this long (a member that
// hangs rather than dies); the agent moves on to the next endpoint.
const defaultStallTimeout = time.Minute

// SnapshotConfig is the snapshot agent's environment, read and checked.
type SnapshotConfig struct {
	// Endpoints and Members pair up, in the order they are tried.
	Endpoints, Members []string
	// Etcd holds the TLS files and credentials (its Endpoints are set per attempt).
	Etcd  etcdaccess.Files
	Owner string
	Dest  string
	// Action is snapshot.ActionSave or snapshot.ActionDelete (which needs no etcd).
	Action string
	S3     snapshot.S3Config
	// PVC destination: the directory and file written, the claim and path the URI names.
	PVCDir, PVCFile, PVCClaim, PVCPath string
	TerminationLog                     string
	StallTimeout                       time.Duration
	// Framing: how the artifact is stored (plain unless asked), and the keys of an encrypted
	// one (its recipients write; its identities, when any, let the read-back decrypt).
	Format artifact.Format
	Keys   artifact.Keyring
	// KeyDir is where the encryption Secret is mounted (empty: no encryption).
	KeyDir string
}

// Secrets are the values no message may contain.
func (c SnapshotConfig) Secrets() []string {
	return append([]string{c.Etcd.Password, c.S3.SecretAccessKey, c.S3.AccessKeyID}, identityTexts(c.Keys)...)
}

// identityTexts are the private keys' texts, for redaction.
func identityTexts(k artifact.Keyring) []string {
	var out []string
	for _, id := range k.Identities {
		if s, ok := id.(fmt.Stringer); ok {
			out = append(out, s.String())
		}
	}
	return out
}

// readFraming reads the compression and the encryption keys (only a save frames).
func (c *SnapshotConfig) readFraming(getenv func(string) string) error {
	switch v := v1alpha2.SnapshotCompression(getenv(snapshot.EnvSnapshotCompression)); v {
	case "", v1alpha2.CompressionNone:
	case v1alpha2.CompressionZstd:
		c.Format.Compressed = true
	default:
		return fmt.Errorf("%s %q: want %s or %s", snapshot.EnvSnapshotCompression, v, v1alpha2.CompressionZstd, v1alpha2.CompressionNone)
	}
	c.KeyDir = getenv(snapshot.EnvEncryptionKeyDir)
	if c.KeyDir == "" {
		return nil
	}
	var err error
	if c.Keys, err = snapshot.ReadKeyring(c.KeyDir); err != nil {
		return err
	}
	if len(c.Keys.Writing()) == 0 {
		return snapshot.Fail(snapshot.ReasonEncryptionKeyMissing, "encryption keys in %s: no age recipient to encrypt to", c.KeyDir)
	}
	c.Format.Encrypted = true
	return nil
}

// SnapshotConfigFromEnv reads the contract's variables through getenv.
func SnapshotConfigFromEnv(getenv func(string) string) (SnapshotConfig, error) {
	c := SnapshotConfig{
		Endpoints:      splitList(getenv(snapshot.EnvEtcdEndpoints)),
		Members:        splitList(getenv(snapshot.EnvEtcdMemberNames)),
		Owner:          strings.TrimSpace(getenv(snapshot.EnvSnapshotOwner)),
		Dest:           getenv(snapshot.EnvSnapshotDest),
		Action:         envOr(getenv, snapshot.EnvSnapshotAction, snapshot.ActionSave),
		TerminationLog: envOr(getenv, snapshot.EnvTerminationLog, snapshot.DefaultTerminationLog),
		StallTimeout:   defaultStallTimeout,
		Etcd: etcdaccess.Files{
			CAFile: getenv(snapshot.EnvEtcdCAFile), CertFile: getenv(snapshot.EnvEtcdCertFile),
			KeyFile: getenv(snapshot.EnvEtcdKeyFile), Username: getenv(snapshot.EnvEtcdUsername),
		},
	}
	switch c.Action {
	case snapshot.ActionSave:
		if err := c.readEtcd(getenv(snapshot.EnvEtcdPasswordFile)); err != nil {
			return c, err
		}
		if err := c.readFraming(getenv); err != nil {
			return c, err
		}
	case snapshot.ActionDelete:
	default:
		return c, fmt.Errorf("%s %q: want %s or %s", snapshot.EnvSnapshotAction, c.Action, snapshot.ActionSave, snapshot.ActionDelete)
	}
	if c.Owner == "" {
		return c, fmt.Errorf("%s is empty", snapshot.EnvSnapshotOwner)
	}
	switch c.Dest {
	case snapshot.DestS3:
		var err error
		c.S3, err = s3FromEnv(getenv)
		if err != nil {
			return c, err
		}
		return c, c.S3.Validate()
	case snapshot.DestPVC:
		c.PVCDir, c.PVCFile = getenv(snapshot.EnvPVCDir), getenv(snapshot.EnvPVCFile)
		c.PVCClaim, c.PVCPath = getenv(snapshot.EnvPVCClaim), getenv(snapshot.EnvPVCPath)
		return c, nil
	}
	return c, fmt.Errorf("%s %q: want %s or %s", snapshot.EnvSnapshotDest, c.Dest, snapshot.DestS3, snapshot.DestPVC)
}

// readEtcd checks the endpoints and the TLS files and reads the password.
func (c *SnapshotConfig) readEtcd(passwordFile string) error {
	if len(c.Endpoints) == 0 {
		return fmt.Errorf("%s is empty", snapshot.EnvEtcdEndpoints)
	}
	if len(c.Members) != len(c.Endpoints) {
		return fmt.Errorf("%s names %d members for %d endpoints in %s",
			snapshot.EnvEtcdMemberNames, len(c.Members), len(c.Endpoints), snapshot.EnvEtcdEndpoints)
	}
	if (c.Etcd.CertFile == "") != (c.Etcd.KeyFile == "") {
		return fmt.Errorf("%s and %s go together", snapshot.EnvEtcdCertFile, snapshot.EnvEtcdKeyFile)
	}
	if c.Etcd.CAFile == "" && c.Etcd.CertFile != "" {
		return fmt.Errorf("%s without %s: a client certificate needs TLS", snapshot.EnvEtcdCertFile, snapshot.EnvEtcdCAFile)
	}
	for _, f := range []string{c.Etcd.CAFile, c.Etcd.CertFile, c.Etcd.KeyFile} {
		if err := readable(f); err != nil {
			return err
		}
	}
	return c.readPassword(passwordFile)
}

func (c *SnapshotConfig) readPassword(file string) error {
	switch {
	case c.Etcd.Username == "" && file == "":
		return nil
	case c.Etcd.Username == "":
		return snapshot.Fail(snapshot.ReasonCredentialsMissing, "%s is set but %s is empty", snapshot.EnvEtcdPasswordFile, snapshot.EnvEtcdUsername)
	case file == "":
		return snapshot.Fail(snapshot.ReasonCredentialsMissing, "%s is set but %s is empty", snapshot.EnvEtcdUsername, snapshot.EnvEtcdPasswordFile)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return snapshot.Fail(snapshot.ReasonCredentialsMissing, "etcd password: %w", err)
	}
	// A Secret written from a file often ends with a newline that is not part of the password.
	c.Etcd.Password = strings.TrimRight(string(b), "\r\n")
	if c.Etcd.Password == "" {
		return snapshot.Fail(snapshot.ReasonCredentialsMissing, "etcd password file %s is empty", file)
	}
	return nil
}

// s3FromEnv reads an S3 location and its keys.
func s3FromEnv(getenv func(string) string) (snapshot.S3Config, error) {
	c := snapshot.S3Config{
		Endpoint: getenv(snapshot.EnvS3Endpoint), Bucket: getenv(snapshot.EnvS3Bucket), Key: getenv(snapshot.EnvS3Key),
		Region:      envOr(getenv, snapshot.EnvS3Region, snapshot.DefaultS3Region),
		AccessKeyID: getenv(snapshot.EnvAWSAccessKeyID), SecretAccessKey: getenv(snapshot.EnvAWSSecretAccessKey),
	}
	var err error
	c.ForcePathStyle, err = parseBool(getenv, snapshot.EnvS3ForcePathStyle)
	return c, err
}

// readable checks that a file named by the environment can be opened (empty: not configured).
func readable(path string) error {
	if path == "" {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	return f.Close()
}

// splitList splits a comma-separated list, dropping blanks.
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func envOr(getenv func(string) string, name, fallback string) string {
	if v := getenv(name); v != "" {
		return v
	}
	return fallback
}

// parseBool reads a true/false variable; unset is false.
func parseBool(getenv func(string) string, name string) (bool, error) {
	v := getenv(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%s %q: want true or false", name, v)
	}
	return b, nil
}
