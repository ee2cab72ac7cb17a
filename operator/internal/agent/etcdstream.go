package agent

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/cozystack/etcd-operator/operator/internal/artifact"
	"github.com/cozystack/etcd-operator/operator/internal/etcd"
	"github.com/cozystack/etcd-operator/operator/internal/snapshot"
)

// nextMember is an attempt's failure that the next endpoint may not share: the member is down,
// or its stream broke or stalled. The partial artifact has been discarded.
type nextMember struct{ err error }

func (n *nextMember) Error() string { return n.err.Error() }

// errStalled ends a stream that delivered nothing for the stall timeout.
var errStalled = errors.New("the snapshot stream stalled")

// peekSize is how much of the stream is awaited before anything is written to the store: a
// refusal (authentication, a member not serving) arrives with the first message.
const peekSize = 64 << 10

// attempt streams member's snapshot into the store through a client pinned to its endpoint.
func (a *SnapshotAgent) attempt(ctx context.Context, member, ep string, start time.Time) (snapshot.Meta, snapshot.Sum, error) {
	files := a.Config.Etcd
	files.Endpoints = []string{ep}
	cli, err := a.Dial(ctx, files)
	if err != nil {
		return snapshot.Meta{}, snapshot.Sum{}, a.etcdError(ctx, "connecting", err)
	}
	defer func() { _ = cli.Close() }()
	st, err := cli.Status(ctx, ep)
	if err != nil {
		return snapshot.Meta{}, snapshot.Sum{}, a.etcdError(ctx, "status", err)
	}
	meta := snapshot.Meta{
		Owner: a.Config.Owner, Member: member, MemberID: snapshot.FormatID(st.MemberID),
		ClusterID: snapshot.FormatID(st.ClusterID), Revision: st.Revision, EtcdVersion: st.Version,
		StartTime: snapshot.FormatTime(start),
	}
	// The stream has a context of its own so the stall watchdog can end it; the store keeps
	// ctx, so that it can still abort its upload when the stream ends that way.
	sctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	rc, err := cli.Snapshot(sctx)
	if err != nil {
		return meta, snapshot.Sum{}, a.etcdError(ctx, "snapshot", streamCause(sctx, err))
	}
	defer func() { _ = rc.Close() }()
	src := bufio.NewReaderSize(&stallReader{r: rc, timeout: a.Config.StallTimeout, cancel: cancel}, peekSize)
	if _, err := src.Peek(1); err != nil {
		return meta, snapshot.Sum{}, a.etcdError(ctx, "snapshot", streamCause(sctx, err))
	}
	a.Log.Printf("streaming member %s (%s, ID %s, revision %d, etcd %s) to %s",
		member, ep, meta.MemberID, meta.Revision, meta.EtcdVersion, a.Store.URI())
	return a.store(ctx, sctx, src, meta)
}

// store writes the stream, framed as configured, and tells a broken stream (try the next
// member) from a failed store (stop: another member would not help). The sum is of the bytes
// stored; etcd's trailer is checked on the plain stream before any framing.
func (a *SnapshotAgent) store(ctx, sctx context.Context, src io.Reader, meta snapshot.Meta) (snapshot.Meta, snapshot.Sum, error) {
	began := time.Now()
	tee := snapshot.NewTee(src)
	framed, err := artifact.Encode(tee, a.Config.Format, a.Config.Keys.Writing())
	if err != nil {
		return meta, snapshot.Sum{}, err
	}
	defer func() { _ = framed.Close() }() // ends the framing goroutine when the store gave up
	stored, sumOf := io.Reader(tee), tee.Sum
	if a.Config.Format != (artifact.Format{}) {
		d := snapshot.NewDigest()
		stored, sumOf = io.TeeReader(framed, d), d.Sum
	}
	err = a.Store.Put(ctx, stored, meta)
	sum := sumOf()
	if err == nil {
		secs := time.Since(began).Seconds()
		plain := tee.Sum().Size
		a.Log.Printf("stored %d bytes (%s of %d) in %.1fs (%.1f MiB/s of etcd's stream)", sum.Size, a.Config.Format, plain, secs,
			float64(plain)/(1<<20)/max(secs, 1e-3))
		return meta, sum, nil
	}
	if serr := tee.Err(); serr != nil {
		if snapshot.ReasonOf(serr) == snapshot.ReasonChecksumMismatch {
			return meta, sum, snapshot.Fail(snapshot.ReasonChecksumMismatch,
				"member %s sent a snapshot that fails etcd's own check: %w", meta.Member, serr)
		}
		return meta, sum, a.etcdError(ctx, fmt.Sprintf("stream broke after %d bytes", tee.Sum().Size), streamCause(sctx, serr))
	}
	return meta, sum, err
}

// etcdError classifies an etcd failure: refused credentials end the run (every member shares
// them), a cancelled run ends it, anything else is worth the next member.
func (a *SnapshotAgent) etcdError(ctx context.Context, step string, err error) error {
	err = fmt.Errorf("%s: %w", step, err)
	switch {
	case ctx.Err() != nil:
		return snapshot.Fail(snapshot.ReasonFailed, "cancelled: %w", err)
	case etcd.IsAuthFailed(err):
		return snapshot.Fail(snapshot.ReasonAuthFailed, "etcd refused the credentials of user %q: %w", a.Config.Etcd.Username, err)
	case etcd.IsAuthRequired(err) && a.Config.Etcd.Username == "":
		return snapshot.Fail(snapshot.ReasonCredentialsMissing, "etcd has authentication on but no %s was given: %w", snapshot.EnvEtcdUsername, err)
	case etcd.IsAuthRequired(err):
		return snapshot.Fail(snapshot.ReasonAuthFailed, "etcd refused user %q: %w", a.Config.Etcd.Username, err)
	}
	return &nextMember{err: err}
}

// streamCause names the stall when the watchdog ended the stream.
func streamCause(sctx context.Context, err error) error {
	if cause := context.Cause(sctx); errors.Is(cause, errStalled) {
		return fmt.Errorf("%w: %w", cause, err)
	}
	return err
}

// stallReader cancels the stream when one read from etcd waits longer than timeout. Only the
// wait on etcd counts: a slow store delays the next read, not this one.
type stallReader struct {
	r       io.Reader
	timeout time.Duration
	cancel  context.CancelCauseFunc
}

func (s *stallReader) Read(p []byte) (int, error) {
	if s.timeout <= 0 {
		return s.r.Read(p)
	}
	t := time.AfterFunc(s.timeout, func() { s.cancel(errStalled) })
	n, err := s.r.Read(p)
	t.Stop()
	return n, err
}
