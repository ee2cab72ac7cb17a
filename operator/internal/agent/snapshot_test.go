package agent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	"github.com/cozystack/etcd-operator/operator/internal/etcd"
	"github.com/cozystack/etcd-operator/operator/internal/etcdaccess"
	"github.com/cozystack/etcd-operator/operator/internal/snapshot"
)

// Unit tests of the snapshot agent's decisions, with a fake etcd per endpoint and a fake store.

func intactStream(n int) []byte {
	db := bytes.Repeat([]byte("etcd"), n/4)
	h := sha256.Sum256(db)
	return append(db, h[:]...)
}

// member is how a fake endpoint behaves.
type member struct {
	dialErr, statusErr error
	// stream is what Snapshot returns; broken ends it with that error instead of EOF.
	stream []byte
	broken error
	// stall makes the stream deliver nothing until its context ends.
	stall bool
}

type fakeClient struct {
	etcd.Client // unimplemented methods panic
	m           member
}

func (f *fakeClient) Close() error { return nil }

func (f *fakeClient) Status(context.Context, string) (etcd.EndpointStatus, error) {
	return etcd.EndpointStatus{MemberID: 0xa, ClusterID: 0xc, Revision: 7, Version: "3.6.16"}, f.m.statusErr
}

func (f *fakeClient) Snapshot(ctx context.Context) (io.ReadCloser, error) {
	if f.m.stall {
		return io.NopCloser(ctxReader{ctx}), nil
	}
	var r io.Reader = bytes.NewReader(f.m.stream)
	if f.m.broken != nil {
		r = io.MultiReader(r, errReader{f.m.broken})
	}
	return io.NopCloser(r), nil
}

type ctxReader struct{ ctx context.Context }

func (c ctxReader) Read([]byte) (int, error) { <-c.ctx.Done(); return 0, c.ctx.Err() }

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// fakeStore keeps the artifact in memory; putErr fails Put after reading everything.
type fakeStore struct {
	data    []byte
	meta    *snapshot.Meta
	putErr  error
	corrupt bool // Open returns other bytes than were put
	deleted bool
}

func (s *fakeStore) URI() string { return "s3://b/k" }
func (s *fakeStore) Lookup(context.Context) (snapshot.Meta, bool, error) {
	if s.meta == nil {
		return snapshot.Meta{}, false, nil
	}
	return *s.meta, true, nil
}
func (s *fakeStore) Put(_ context.Context, r io.Reader, m snapshot.Meta) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if s.putErr != nil {
		return s.putErr
	}
	s.data, s.meta = b, &m
	return nil
}
func (s *fakeStore) Open(context.Context) (io.ReadCloser, error) {
	b := s.data
	if s.corrupt {
		b = intactStream(1000)
	}
	return io.NopCloser(bytes.NewReader(b)), nil
}
func (s *fakeStore) Delete(context.Context) error {
	s.deleted, s.data, s.meta = true, nil, nil
	return nil
}

func runFake(t *testing.T, store *fakeStore, username string, members ...member) (snapshot.SnapshotResult, []string) {
	t.Helper()
	cfg := SnapshotConfig{Owner: "uid", StallTimeout: 100 * time.Millisecond, Etcd: etcdaccess.Files{Username: username}}
	byURL := map[string]member{}
	for i, m := range members {
		url := "http://m" + string(rune('0'+i))
		cfg.Endpoints = append(cfg.Endpoints, url)
		cfg.Members = append(cfg.Members, "m"+string(rune('0'+i)))
		byURL[url] = m
	}
	var dialled []string
	a := &SnapshotAgent{Config: cfg, Store: store, Dial: func(_ context.Context, f etcdaccess.Files) (etcd.Client, error) {
		dialled = append(dialled, f.Endpoints[0])
		m := byURL[f.Endpoints[0]]
		if m.dialErr != nil {
			return nil, m.dialErr
		}
		return &fakeClient{m: m}, nil
	}}
	return a.Run(context.Background()), dialled
}

func TestSnapshotAgentDecisions(t *testing.T) {
	good := intactStream(100_000)
	truncated := good[:len(good)-10]
	broken := errors.New("rpc error: code = Unavailable desc = error reading from server: EOF")
	noSpace := snapshot.Fail(snapshot.ReasonNoSpace, "volume full")
	for _, tc := range []struct {
		name    string
		user    string
		store   fakeStore
		members []member
		reason  snapshot.Reason // "" = Complete
		member  string          // that streamed
		dialled int
	}{
		{"first member streams", "", fakeStore{}, []member{{stream: good}, {stream: good}}, "", "m0", 1},
		{"status fails: next member", "", fakeStore{}, []member{{statusErr: errors.New("deadline")}, {stream: good}}, "", "m1", 2},
		{"stream breaks: next member", "", fakeStore{}, []member{{stream: good[:5000], broken: broken}, {stream: good}}, "", "m1", 2},
		{"stream stalls: next member", "", fakeStore{}, []member{{stall: true}, {stream: good}}, "", "m1", 2},
		{"every member fails", "", fakeStore{}, []member{{dialErr: errors.New("refused")}, {stall: true}}, snapshot.ReasonEtcdUnreachable, "", 2},
		{"wrong password: stop", "root", fakeStore{}, []member{{dialErr: rpctypes.ErrGRPCAuthFailed}, {stream: good}}, snapshot.ReasonAuthFailed, "", 1},
		{"auth on, no user: stop", "", fakeStore{}, []member{{stream: nil, broken: rpctypes.ErrGRPCUserEmpty}, {stream: good}}, snapshot.ReasonCredentialsMissing, "", 1},
		{"permission denied: stop", "user", fakeStore{}, []member{{broken: rpctypes.ErrGRPCPermissionDenied}, {stream: good}}, snapshot.ReasonAuthFailed, "", 1},
		{"store fails: stop", "", fakeStore{putErr: noSpace}, []member{{stream: good}, {stream: good}}, snapshot.ReasonNoSpace, "", 1},
		{"trailer mismatch: stop", "", fakeStore{}, []member{{stream: truncated}, {stream: good}}, snapshot.ReasonChecksumMismatch, "", 1},
		{"stored bytes differ: deleted", "", fakeStore{corrupt: true}, []member{{stream: good}}, snapshot.ReasonChecksumMismatch, "", 1},
		{"another owner's artifact", "", fakeStore{meta: &snapshot.Meta{Owner: "other"}}, []member{{stream: good}}, snapshot.ReasonArtifactExists, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := tc.store
			r, dialled := runFake(t, &store, tc.user, tc.members...)
			if tc.reason == "" {
				if r.Phase != snapshot.PhaseComplete || r.Member != tc.member || r.SizeBytes != int64(len(good)) ||
					r.MemberID != "000000000000000a" || r.ClusterID != "000000000000000c" || r.Revision != 7 || r.EtcdVersion != "3.6.16" {
					t.Errorf("result %+v", r)
				}
			} else if r.Phase != snapshot.PhaseFailed || r.Reason != tc.reason {
				t.Errorf("result %+v, want %s", r, tc.reason)
			}
			if len(dialled) != tc.dialled {
				t.Errorf("dialled %v, want %d endpoints", dialled, tc.dialled)
			}
			if tc.reason == snapshot.ReasonChecksumMismatch && store.data != nil {
				t.Errorf("a mismatching artifact was kept")
			}
		})
	}
}

// An artifact of this same snapshot (an earlier attempt completed it) is verified and reported
// from its metadata without touching etcd.
func TestSnapshotAgentReportsItsOwnArtifact(t *testing.T) {
	good := intactStream(10_000)
	meta := snapshot.Meta{Owner: "uid", Member: "m9", MemberID: "0000000000000009", ClusterID: "000000000000000c",
		Revision: 3, EtcdVersion: "3.5.35", StartTime: "2026-01-01T00:00:00Z", CompletionTime: "2026-01-01T00:01:00Z"}
	store := &fakeStore{data: good, meta: &meta}
	r, dialled := runFake(t, store, "", member{stream: good})
	if len(dialled) != 0 || r.Phase != snapshot.PhaseComplete || r.Member != "m9" || r.Revision != 3 ||
		r.CompletionTime != meta.CompletionTime || r.SizeBytes != int64(len(good)) {
		t.Errorf("dialled %v, result %+v", dialled, r)
	}
	store = &fakeStore{data: good[:len(good)-1], meta: &meta}
	if r, _ := runFake(t, store, "", member{stream: good}); r.Reason != snapshot.ReasonChecksumMismatch || !store.deleted {
		t.Errorf("a damaged earlier artifact: %+v, deleted=%v", r, store.deleted)
	}
}

// Secrets never reach the result, even when an error quotes them.
func TestSnapshotAgentRedacts(t *testing.T) {
	store := &fakeStore{putErr: errors.New("store said: bad key hunter2-secret")}
	cfg := SnapshotConfig{Owner: "uid", Endpoints: []string{"http://m0"}, Members: []string{"m0"}}
	cfg.S3.SecretAccessKey = "hunter2-secret"
	a := &SnapshotAgent{Config: cfg, Store: store, Log: NewLogger(nil, "t", cfg.Secrets()...),
		Dial: func(context.Context, etcdaccess.Files) (etcd.Client, error) {
			return &fakeClient{m: member{stream: intactStream(1000)}}, nil
		}}
	r := a.Run(context.Background())
	if r.Phase != snapshot.PhaseFailed || strings.Contains(r.Message, "hunter2") {
		t.Errorf("result %+v", r)
	}
}
