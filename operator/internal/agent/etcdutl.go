package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/cozystack/etcd-operator/operator/internal/snapshot"
)

// etcdutl runs the target image's etcdutl. Its environment is PATH alone: the agent's own holds
// S3 keys that etcdutl has no business seeing.
type etcdutl struct{ path string }

// maxOutput is how much of etcdutl's output a failure message keeps (the end of it).
const maxOutput = 1500

// check refuses a path that is not an executable regular file: an etcd image before 3.5 has no
// etcdutl, and failing before the download saves it.
func (u etcdutl) check() error {
	fi, err := os.Stat(u.path)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return snapshot.Fail(snapshot.ReasonUnsupported,
			"no executable etcdutl at %s (etcd images before 3.5 have none): %v", u.path, err)
	}
	return nil
}

func (u etcdutl) run(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, u.path, args...)
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin"}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.Bytes(), fmt.Errorf("etcdutl %s: %w: %s", strings.Join(args, " "), err, tail(out.String()))
	}
	return out.Bytes(), nil
}

// supports refuses flags this etcdutl's `snapshot restore` does not list.
func (u etcdutl) supports(ctx context.Context, flags ...string) error {
	help, err := u.run(ctx, "snapshot", "restore", "--help")
	if err != nil {
		return snapshot.WithReason(snapshot.ReasonEtcdutlFailed, err)
	}
	for _, f := range flags {
		if !bytes.Contains(help, []byte(f+" ")) {
			return snapshot.Fail(snapshot.ReasonUnsupported, "this etcdutl (%s) has no %s", u.path, f)
		}
	}
	return nil
}

// snapStatus is what etcdutl snapshot status -w json says; Version (the storage version) is
// absent from 3.5's etcdutl and empty for a snapshot of etcd 3.5 or older.
type snapStatus struct {
	Revision int64   `json:"revision"`
	Version  *string `json:"version"`
}

// status learns the snapshot's revision and storage version.
func (u etcdutl) status(ctx context.Context, db string) (revision int64, version string, err error) {
	out, err := u.run(ctx, "snapshot", "status", db, "-w", "json")
	if err != nil {
		return 0, "", snapshot.WithReason(snapshot.ReasonEtcdutlFailed, err)
	}
	var st snapStatus
	if err := json.Unmarshal(bytes.TrimSpace(out), &st); err != nil {
		return 0, "", snapshot.Fail(snapshot.ReasonEtcdutlFailed, "etcdutl snapshot status: %w: %s", err, tail(string(out)))
	}
	if st.Version != nil {
		return st.Revision, *st.Version, nil
	}
	version, err = storageVersion(db)
	return st.Revision, version, err
}

// storageVersion reads the snapshot's storage version itself (meta/storageVersion, written by
// etcd 3.6 and later), for an etcdutl that does not report it.
func storageVersion(db string) (string, error) {
	b, err := bolt.Open(db, 0o400, &bolt.Options{ReadOnly: true, Timeout: 10 * time.Second})
	if err != nil {
		return "", snapshot.Fail(snapshot.ReasonFailed, "reading the snapshot's storage version: %w", err)
	}
	defer b.Close()
	var v string
	err = b.View(func(tx *bolt.Tx) error {
		if meta := tx.Bucket([]byte("meta")); meta != nil {
			v = string(meta.Get([]byte("storageVersion")))
		}
		return nil
	})
	return v, err
}

// restoreArgs are etcdutl's arguments to restore db into dir as the configured member.
func restoreArgs(c RestoreConfig, db, dir string) []string {
	args := []string{"snapshot", "restore", db, "--data-dir", dir, "--name", c.Name,
		"--initial-cluster", c.InitialCluster, "--initial-cluster-token", c.InitialClusterToken,
		"--initial-advertise-peer-urls", c.InitialAdvertisePeerURLs}
	if c.BumpRevision > 0 {
		args = append(args, "--bump-revision", strconv.FormatUint(c.BumpRevision, 10))
	}
	if c.MarkCompacted {
		args = append(args, "--mark-compacted")
	}
	return args
}

// restore runs etcdutl snapshot restore; a full volume is NoSpace.
func (u etcdutl) restore(ctx context.Context, c RestoreConfig, db, dir string) error {
	out, err := u.run(ctx, restoreArgs(c, db, dir)...)
	if err == nil {
		return nil
	}
	if bytes.Contains(out, []byte("no space left on device")) {
		return snapshot.WithReason(snapshot.ReasonNoSpace, err)
	}
	return snapshot.WithReason(snapshot.ReasonEtcdutlFailed, err)
}

func tail(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > maxOutput {
		return "…" + s[len(s)-maxOutput:]
	}
	return s
}

// minor is a major.minor version.
type minor struct{ major, minor int }

func (m minor) String() string { return fmt.Sprintf("%d.%d", m.major, m.minor) }

func (m minor) after(o minor) bool {
	return m.major > o.major || m.major == o.major && m.minor > o.minor
}

// parseMinor reads the major and minor of "3.6.16", "v3.6.16", "3.6.0-rc.1" or "3.6".
func parseMinor(v string) (minor, error) {
	parts := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3)
	if len(parts) < 2 {
		return minor{}, fmt.Errorf("version %q: want <major>.<minor>[.<patch>]", v)
	}
	maj, err1 := strconv.Atoi(parts[0])
	mnr, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil || maj < 0 || mnr < 0 {
		return minor{}, fmt.Errorf("version %q: want <major>.<minor>[.<patch>]", v)
	}
	return minor{maj, mnr}, nil
}

// checkTarget refuses a snapshot whose storage version is newer than the target's minor: etcd
// does not downgrade data. An empty storage version is etcd 3.5 or older.
func checkTarget(storage, target string) error {
	if storage == "" {
		return nil
	}
	s, err := parseMinor(storage)
	if err != nil {
		return snapshot.Fail(snapshot.ReasonFailed, "the snapshot's storage version: %w", err)
	}
	t, err := parseMinor(target)
	if err != nil {
		return snapshot.Fail(snapshot.ReasonFailed, "%s: %w", snapshot.EnvEtcdVersion, err)
	}
	if s.after(t) {
		return snapshot.Fail(snapshot.ReasonSnapshotNewerThanTarget,
			"the snapshot's storage version is %s, newer than the target etcd %s: etcd does not downgrade data; restore into etcd %s or later", s, target, s)
	}
	return nil
}
