package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/artifact"
	"github.com/cozystack/etcd-operator/operator/internal/etcd"
	"github.com/cozystack/etcd-operator/operator/internal/etcdaccess"
	"github.com/cozystack/etcd-operator/operator/internal/snapshot"
)

// DialFunc opens a standalone etcd client (etcdaccess.DialFiles; tests may wrap it).
type DialFunc func(ctx context.Context, f etcdaccess.Files) (etcd.Client, error)

// SnapshotAgent streams one member's database into a store and verifies what was stored.
type SnapshotAgent struct {
	Config SnapshotConfig
	Store  snapshot.Store
	Dial   DialFunc
	Log    *Logger
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// NewSnapshotStore builds the store the configuration names.
func NewSnapshotStore(c SnapshotConfig) (snapshot.Store, error) {
	if c.Dest == snapshot.DestS3 {
		return snapshot.NewS3Store(c.S3)
	}
	return snapshot.NewDirStore(c.PVCDir, c.PVCFile, c.PVCClaim, c.PVCPath)
}

func (a *SnapshotAgent) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// Run takes the snapshot and returns the result to report.
func (a *SnapshotAgent) Run(ctx context.Context) snapshot.SnapshotResult {
	r, err := a.run(ctx)
	if err != nil {
		reason, msg := snapshot.Failed(err)
		return snapshot.SnapshotResult{Phase: snapshot.PhaseFailed, Reason: reason, Message: a.Log.Clean(msg)}
	}
	return r
}

func (a *SnapshotAgent) run(ctx context.Context) (snapshot.SnapshotResult, error) {
	if a.Dial == nil {
		a.Dial = etcdaccess.DialFiles
	}
	start := a.now()
	existing, ok, err := a.Store.Lookup(ctx)
	if err != nil {
		return snapshot.SnapshotResult{}, err
	}
	if ok {
		return a.reportExisting(ctx, existing)
	}
	meta, sum, err := a.stream(ctx, start)
	if err != nil {
		return snapshot.SnapshotResult{}, err
	}
	format, err := a.verify(ctx, &sum)
	if err != nil {
		return snapshot.SnapshotResult{}, err
	}
	meta.CompletionTime = snapshot.FormatTime(a.now())
	return a.complete(meta, sum, format), nil
}

// reportExisting handles an artifact already at the destination: a previous attempt of this
// same snapshot completed it (verify and report it) or another snapshot owns it (refuse).
func (a *SnapshotAgent) reportExisting(ctx context.Context, m snapshot.Meta) (snapshot.SnapshotResult, error) {
	if m.Owner != a.Config.Owner {
		owner := m.Owner
		if owner == "" {
			owner = "an unknown owner"
		}
		return snapshot.SnapshotResult{}, snapshot.Fail(snapshot.ReasonArtifactExists,
			"%s already exists and belongs to %s, not to snapshot %s", a.Store.URI(), owner, a.Config.Owner)
	}
	a.Log.Printf("%s exists from an earlier attempt of this snapshot; verifying it", a.Store.URI())
	var sum snapshot.Sum
	format, err := a.verify(ctx, &sum)
	if err != nil {
		return snapshot.SnapshotResult{}, err
	}
	if m.CompletionTime == "" {
		m.CompletionTime = snapshot.FormatTime(a.now())
	}
	return a.complete(m, sum, format), nil
}

// complete is the result of a stored artifact; format is what the read-back found.
func (a *SnapshotAgent) complete(m snapshot.Meta, sum snapshot.Sum, format artifact.Format) snapshot.SnapshotResult {
	r := snapshot.SnapshotResult{
		Phase: snapshot.PhaseComplete, URI: a.Store.URI(), SizeBytes: sum.Size, Checksum: sum.Checksum,
		Compression: string(v1alpha2.CompressionNone),
		Member:      m.Member, MemberID: m.MemberID, ClusterID: m.ClusterID, Revision: m.Revision,
		EtcdVersion: m.EtcdVersion, StartTime: m.StartTime, CompletionTime: m.CompletionTime,
	}
	if format.Compressed {
		r.Compression = string(v1alpha2.CompressionZstd)
	}
	if format.Encrypted {
		r.Recipients = artifact.RecipientNames(a.Config.Keys.Writing())
	}
	return r
}

// stream tries the endpoints in order until one member's snapshot is stored. A broken etcd
// stream moves on to the next member; anything else ends the run.
func (a *SnapshotAgent) stream(ctx context.Context, start time.Time) (snapshot.Meta, snapshot.Sum, error) {
	var tried []string
	for i, ep := range a.Config.Endpoints {
		member := a.Config.Members[i]
		meta, sum, err := a.attempt(ctx, member, ep, start)
		if err == nil {
			return meta, sum, nil
		}
		var next *nextMember
		if !errors.As(err, &next) {
			return meta, sum, err
		}
		a.Log.Printf("member %s (%s): %v", member, ep, next.err)
		tried = append(tried, fmt.Sprintf("member %s (%s): %v", member, ep, next.err))
	}
	return snapshot.Meta{}, snapshot.Sum{}, snapshot.Fail(snapshot.ReasonEtcdUnreachable,
		"no member could stream a snapshot: %s", strings.Join(tried, "; "))
}

// verify reads the stored artifact back: the stored bytes must be what was written when want
// is known (Size > 0), and the etcd snapshot inside them must pass etcd's trailer check (when
// the keys can decrypt it; a Secret with only recipients leaves the stored checksum to
// vouch). On a mismatch, or an artifact its own keys cannot read, the artifact is deleted.
// want is set to what was read; the format found is returned.
func (a *SnapshotAgent) verify(ctx context.Context, want *snapshot.Sum) (artifact.Format, error) {
	began := time.Now()
	rc, err := a.Store.Open(ctx)
	if err != nil {
		return artifact.Format{}, err
	}
	got, err := snapshot.ReadArtifact(rc, a.Store.URI(), snapshot.ReadOptions{Identities: a.Config.Keys.Identities, AllowSealed: true})
	_ = rc.Close()
	switch snapshot.ReasonOf(err) {
	case snapshot.ReasonChecksumMismatch, snapshot.ReasonDecryptionFailed:
	default:
		if err != nil {
			return got.Format, snapshot.WithReason(snapshot.ReasonFailed, fmt.Errorf("reading %s back: %w", a.Store.URI(), err))
		}
	}
	if err == nil && want.Size > 0 && got.Stored != *want {
		err = snapshot.Fail(snapshot.ReasonChecksumMismatch, "stored %d bytes %s, but wrote %d bytes %s",
			got.Stored.Size, got.Stored.Checksum, want.Size, want.Checksum)
	}
	if err != nil {
		if derr := a.Store.Delete(ctx); derr != nil {
			a.Log.Printf("deleting the bad artifact %s: %v", a.Store.URI(), derr)
		}
		return got.Format, snapshot.Fail(snapshot.ReasonOf(err), "%s failed verification and was deleted: %w", a.Store.URI(), err)
	}
	inside := fmt.Sprintf("etcd's snapshot inside: %d bytes, intact", got.Plain.Size)
	if got.Sealed {
		inside = "not decrypted: the encryption Secret holds no identity"
	}
	a.Log.Printf("verified %s: %d bytes, %s, %s; %s (read back in %.1fs)", a.Store.URI(), got.Stored.Size, got.Stored.Checksum,
		got.Format, inside, time.Since(began).Seconds())
	*want = got.Stored
	return got.Format, nil
}
