package agent

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/cozystack/etcd-operator/operator/internal/artifact"
	"github.com/cozystack/etcd-operator/operator/internal/snapshot"
)

// Names in the data directory.
const (
	memberDir    = "member"
	restoreDB    = "restore.db"
	restoreStage = ".restore"
)

// RestoreAgent seeds a new member's data directory from a snapshot.
type RestoreAgent struct {
	Config RestoreConfig
	Source snapshot.Source
	Log    *Logger
	// FreeBytes reports the space left for an unprivileged user on the volume holding a path
	// (statfs when nil).
	FreeBytes func(path string) (uint64, error)
}

// RestoreCommand is `manager restore-agent`.
func RestoreCommand(ctx context.Context, getenv func(string) string, stdout, stderr io.Writer) int {
	cfg, err := RestoreConfigFromEnv(getenv)
	log := NewLogger(stderr, snapshot.CommandRestoreAgent, cfg.Secrets()...)
	result := func() snapshot.RestoreResult {
		if err == nil && cfg.VerifyOnly {
			var src snapshot.Source
			if src, err = NewRestoreSource(cfg); err == nil {
				return (&RestoreAgent{Config: cfg, Source: src, Log: log}).Verify(ctx)
			}
		}
		// Idempotent first: a member that has its data starts whatever else the environment says.
		if !cfg.VerifyOnly && restored(cfg.DataDir) {
			return snapshot.RestoreResult{Phase: snapshot.PhaseSkipped}
		}
		if err == nil {
			var src snapshot.Source
			if src, err = NewRestoreSource(cfg); err == nil {
				return (&RestoreAgent{Config: cfg, Source: src, Log: log}).Run(ctx)
			}
		}
		reason, msg := snapshot.Failed(err)
		return snapshot.RestoreResult{Phase: snapshot.PhaseFailed, Reason: reason, Message: log.Clean(msg)}
	}()
	return finish(log, cfg.TerminationLog, snapshot.EncodeRestore(result), stdout, result.Phase != snapshot.PhaseFailed)
}

// NewRestoreSource builds the source the configuration names.
func NewRestoreSource(c RestoreConfig) (snapshot.Source, error) {
	if c.Source == snapshot.DestS3 {
		return snapshot.NewS3Store(c.S3)
	}
	return snapshot.FileSource{Path: c.File}, nil
}

// restored reports a data directory that already holds a member.
func restored(dataDir string) bool {
	if dataDir == "" {
		return false
	}
	_, err := os.Lstat(filepath.Join(dataDir, memberDir))
	return err == nil
}

// Run restores and returns the result to report.
func (a *RestoreAgent) Run(ctx context.Context) snapshot.RestoreResult {
	if restored(a.Config.DataDir) {
		return snapshot.RestoreResult{Phase: snapshot.PhaseSkipped}
	}
	r, err := a.run(ctx)
	a.cleanup()
	if err != nil {
		reason, msg := snapshot.Failed(err)
		return snapshot.RestoreResult{Phase: snapshot.PhaseFailed, Reason: reason, Message: a.Log.Clean(msg)}
	}
	return r
}

func (a *RestoreAgent) path(name string) string { return filepath.Join(a.Config.DataDir, name) }

// cleanup removes what a restore leaves beside member/, now or from an earlier attempt.
func (a *RestoreAgent) cleanup() {
	for _, p := range []string{restoreDB + snapshot.PartSuffix, restoreDB, restoreStage} {
		if err := os.RemoveAll(a.path(p)); err != nil {
			a.Log.Printf("removing %s: %v", a.path(p), err)
		}
	}
}

func (a *RestoreAgent) run(ctx context.Context) (snapshot.RestoreResult, error) {
	a.cleanup()
	util := etcdutl{path: a.Config.Etcdutl}
	if err := a.checkEtcdutl(ctx, util); err != nil {
		return snapshot.RestoreResult{}, err
	}
	sum, err := a.download(ctx)
	if err != nil {
		return snapshot.RestoreResult{}, err
	}
	revision, version, err := util.status(ctx, a.path(restoreDB))
	if err != nil {
		return snapshot.RestoreResult{}, err
	}
	if err := checkTarget(version, a.Config.Version); err != nil {
		return snapshot.RestoreResult{}, err
	}
	a.Log.Printf("snapshot at revision %d, storage version %q; restoring member %s", revision, version, a.Config.Name)
	if err := util.restore(ctx, a.Config, a.path(restoreDB), a.path(restoreStage)); err != nil {
		return snapshot.RestoreResult{}, err
	}
	if err := a.moveInPlace(); err != nil {
		return snapshot.RestoreResult{}, err
	}
	return snapshot.RestoreResult{Phase: snapshot.PhaseRestored, Revision: revision, SizeBytes: sum.Size, Checksum: sum.Checksum}, nil
}

// checkEtcdutl fails before any download when etcdutl is missing or lacks the flags asked for.
func (a *RestoreAgent) checkEtcdutl(ctx context.Context, util etcdutl) error {
	if err := util.check(); err != nil {
		return err
	}
	var flags []string
	if a.Config.BumpRevision > 0 {
		flags = append(flags, "--bump-revision")
	}
	if a.Config.MarkCompacted {
		flags = append(flags, "--mark-compacted")
	}
	if len(flags) == 0 {
		return nil
	}
	return util.supports(ctx, flags...)
}

// download copies the snapshot to restore.db.part with a digest, checks it against the expected
// checksum and etcd's trailer, and renames it to restore.db.
func (a *RestoreAgent) download(ctx context.Context) (snapshot.Sum, error) {
	size, err := a.Source.Size(ctx)
	if err != nil {
		return snapshot.Sum{}, err
	}
	if err := a.checkSpace(size); err != nil {
		return snapshot.Sum{}, err
	}
	a.Log.Printf("downloading %s (%d bytes)", a.Source.Describe(), size)
	sum, err := a.copy(ctx, size)
	if err != nil {
		return sum, err
	}
	if err := os.Rename(a.path(restoreDB+snapshot.PartSuffix), a.path(restoreDB)); err != nil {
		return sum, err
	}
	return sum, nil
}

// Verify reads the whole source through a digest and checks it as a restore would (size,
// expected checksum, etcd's trailer), holding nothing but a read buffer and writing nothing.
func (a *RestoreAgent) Verify(ctx context.Context) snapshot.RestoreResult {
	sum, err := a.verify(ctx)
	if err != nil {
		reason, msg := snapshot.Failed(err)
		return snapshot.RestoreResult{Phase: snapshot.PhaseFailed, Reason: reason, Message: a.Log.Clean(msg), SizeBytes: sum.Size, Checksum: sum.Checksum}
	}
	a.Log.Printf("%s reads through intact: %d bytes, %s", a.Source.Describe(), sum.Size, sum.Checksum)
	return snapshot.RestoreResult{Phase: snapshot.PhaseVerified, SizeBytes: sum.Size, Checksum: sum.Checksum}
}

func (a *RestoreAgent) verify(ctx context.Context) (snapshot.Sum, error) {
	size, err := a.Source.Size(ctx)
	if err != nil {
		return snapshot.Sum{}, err
	}
	rc, err := a.Source.Open(ctx)
	if err != nil {
		return snapshot.Sum{}, err
	}
	defer func() { _ = rc.Close() }()
	o, err := snapshot.ReadArtifact(rc, a.Source.Describe(), snapshot.ReadOptions{Identities: a.Config.Keys.Identities})
	return o.Stored, a.judge(o, size, err)
}

// copy streams the source, decompressed and decrypted, into restore.db.part and checks it.
func (a *RestoreAgent) copy(ctx context.Context, size int64) (snapshot.Sum, error) {
	rc, err := a.Source.Open(ctx)
	if err != nil {
		return snapshot.Sum{}, err
	}
	defer func() { _ = rc.Close() }()
	f, err := os.OpenFile(a.path(restoreDB+snapshot.PartSuffix), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return snapshot.Sum{}, volumeError(err)
	}
	o, err := snapshot.ReadArtifact(rc, a.Source.Describe(), snapshot.ReadOptions{Identities: a.Config.Keys.Identities, Plain: volumeWriter{f}})
	if err == nil {
		err = volumeError(f.Sync())
	}
	if cerr := f.Close(); err == nil {
		err = volumeError(cerr)
	}
	if err == nil && o.Format != (artifact.Format{}) {
		a.Log.Printf("read %s: %d bytes stored (%s), %d bytes of etcd snapshot inside", a.Source.Describe(), o.Stored.Size, o.Format, o.Plain.Size)
	}
	return o.Stored, a.judge(o, size, err)
}

// judge says what is wrong with a read: bytes missing, a checksum other than the expected one
// (said first: it names the stored file a user can compare), or the read's own failure.
func (a *RestoreAgent) judge(o snapshot.Opened, size int64, err error) error {
	if reason := snapshot.ReasonOf(err); err != nil && reason != snapshot.ReasonChecksumMismatch {
		return err
	}
	if o.Stored.Size != size {
		return snapshot.Fail(snapshot.ReasonFailed, "%s is %d bytes but %d were read", a.Source.Describe(), size, o.Stored.Size)
	}
	if want := a.Config.Checksum; want != "" && o.Stored.Checksum != want {
		return snapshot.Fail(snapshot.ReasonChecksumMismatch, "%s has checksum %s, want %s", a.Source.Describe(), o.Stored.Checksum, want)
	}
	return err
}

// volumeWriter is the data volume: its errors carry their reason (NoSpace when full).
type volumeWriter struct{ w io.Writer }

func (v volumeWriter) Write(p []byte) (int, error) {
	n, err := v.w.Write(p)
	return n, volumeError(err)
}

// volumeError is a data volume failure: NoSpace when it is full.
func volumeError(err error) error {
	if err == nil {
		return nil
	}
	if snapshot.IsNoSpace(err) {
		return snapshot.Fail(snapshot.ReasonNoSpace, "the data volume is full: %w", err)
	}
	return snapshot.WithReason(snapshot.ReasonFailed, err)
}

// checkSpace wants twice the snapshot free: the downloaded file and the restored database. Of a
// compressed artifact, size is the stored size, so this is a lower bound: a volume that fills
// while the snapshot is written is still NoSpace.
func (a *RestoreAgent) checkSpace(size int64) error {
	free := a.FreeBytes
	if free == nil {
		free = statfsFree
	}
	avail, err := free(a.Config.DataDir)
	if err != nil {
		return snapshot.Fail(snapshot.ReasonFailed, "statfs %s: %w", a.Config.DataDir, err)
	}
	if need := uint64(2 * size); avail < need {
		return snapshot.Fail(snapshot.ReasonNoSpace, "%s has %d bytes free, a restore of a %d-byte snapshot needs %d",
			a.Config.DataDir, avail, size, need)
	}
	return nil
}

func statfsFree(path string) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0, err
	}
	return st.Bavail * uint64(st.Bsize), nil
}

// moveInPlace renames the restored member/ into the data directory and syncs it: etcd then
// finds a whole member or none.
func (a *RestoreAgent) moveInPlace() error {
	staged := filepath.Join(a.path(restoreStage), memberDir)
	if _, err := os.Stat(staged); errors.Is(err, fs.ErrNotExist) {
		return snapshot.Fail(snapshot.ReasonEtcdutlFailed, "etcdutl left no %s", staged)
	}
	if err := os.Rename(staged, a.path(memberDir)); err != nil {
		return snapshot.WithReason(snapshot.ReasonFailed, err)
	}
	return snapshot.WithReason(snapshot.ReasonFailed, syncPath(a.Config.DataDir))
}

func syncPath(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
