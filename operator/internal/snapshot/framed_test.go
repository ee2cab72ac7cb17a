package snapshot

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"strings"
	"testing"

	"filippo.io/age"

	"github.com/cozystack/etcd-operator/operator/internal/artifact"
)

// withTrailer is body followed by its sha256, as etcd streams a snapshot.
func withTrailer(body []byte) []byte {
	sum := sha256.Sum256(body)
	return append(bytes.Clone(body), sum[:]...)
}

func framed(t *testing.T, plain []byte, f artifact.Format, to ...age.Recipient) []byte {
	t.Helper()
	r, err := artifact.Encode(bytes.NewReader(plain), f, to)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// ReadArtifact sums what is stored, checks etcd's trailer inside the frames, and gives each
// failure the reason an agent reports.
func TestReadArtifact(t *testing.T) {
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	other, _ := age.GenerateX25519Identity()
	plain := withTrailer(bytes.Repeat([]byte("key=value;"), 10000))
	sealed := framed(t, plain, artifact.Format{Compressed: true, Encrypted: true}, id.Recipient())
	badTrailer := bytes.Clone(plain)
	badTrailer[0] ^= 1
	for _, tc := range []struct {
		name       string
		stored     []byte
		opts       ReadOptions
		wantReason Reason // "" success
		wantSealed bool
	}{
		{"plain", plain, ReadOptions{}, "", false},
		{"zstd+age with the key", sealed, ReadOptions{Identities: []age.Identity{other, id}}, "", false},
		{"zstd+age without a key, sealed allowed", sealed, ReadOptions{AllowSealed: true}, "", true},
		{"zstd+age without a key", sealed, ReadOptions{}, ReasonDecryptionFailed, false},
		{"zstd+age with a wrong key", sealed, ReadOptions{Identities: []age.Identity{other}}, ReasonDecryptionFailed, false},
		{"zstd+age truncated", sealed[:len(sealed)-10], ReadOptions{Identities: []age.Identity{id}}, ReasonChecksumMismatch, false},
		{"zstd of a bad trailer", framed(t, badTrailer, artifact.Format{Compressed: true}), ReadOptions{}, ReasonChecksumMismatch, false},
		{"plain with a bad trailer", badTrailer, ReadOptions{}, ReasonChecksumMismatch, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			tc.opts.Plain = &out
			o, err := ReadArtifact(bytes.NewReader(tc.stored), "s3://b/x", tc.opts)
			if tc.wantReason == "" && err != nil || tc.wantReason != "" && ReasonOf(err) != tc.wantReason {
				t.Fatalf("err %v (reason %s), want reason %q", err, ReasonOf(err), tc.wantReason)
			}
			if err != nil && !strings.HasPrefix(err.Error(), "s3://b/x") {
				t.Errorf("the error does not name the artifact: %v", err)
			}
			// Read to its end, whatever the frames found: the checksum is of every byte stored.
			if want := sumOf(tc.stored); tc.wantReason != ReasonDecryptionFailed && o.Stored != want {
				t.Errorf("stored sum %+v, want %+v", o.Stored, want)
			}
			if o.Sealed != tc.wantSealed {
				t.Errorf("sealed %v, want %v", o.Sealed, tc.wantSealed)
			}
			if err == nil && !tc.wantSealed && (!bytes.Equal(out.Bytes(), plain) || o.Plain.Size != int64(len(plain))) {
				t.Errorf("wrote %d bytes of plain snapshot, want the %d", out.Len(), len(plain))
			}
		})
	}
}

// A failing destination (the data volume) keeps its own error and reason.
func TestReadArtifactWriteError(t *testing.T) {
	full := &Error{Reason: ReasonNoSpace, Err: errors.New("no space left on device")}
	_, err := ReadArtifact(bytes.NewReader(withTrailer([]byte("x"))), "f", ReadOptions{Plain: failingWriter{full}})
	if ReasonOf(err) != ReasonNoSpace {
		t.Fatalf("err %v, want NoSpace", err)
	}
}

type failingWriter struct{ err error }

func (f failingWriter) Write([]byte) (int, error) { return 0, f.err }

func sumOf(b []byte) Sum {
	d := NewDigest()
	d.Write(b)
	return d.Sum()
}
