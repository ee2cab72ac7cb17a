package snapshot

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
)

// etcdStream is db followed by its sha256, as etcd's Snapshot RPC sends it.
func etcdStream(db []byte) []byte {
	h := sha256.Sum256(db)
	return append(append([]byte{}, db...), h[:]...)
}

func randomBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.UintN(256))
	}
	return b
}

func TestDigestTrailer(t *testing.T) {
	intact := etcdStream(randomBytes(100_000, 1))
	flipped := bytes.Clone(intact)
	flipped[4242] ^= 0x01
	flippedTrailer := bytes.Clone(intact)
	flippedTrailer[len(flippedTrailer)-1] ^= 0x80
	for _, tc := range []struct {
		name   string
		stream []byte
		intact bool
	}{
		{"intact", intact, true},
		{"truncated by one byte", intact[:len(intact)-1], false},
		{"truncated mid-database", intact[:len(intact)/2], false},
		{"a byte of the database flipped", flipped, false},
		{"a byte of the trailer flipped", flippedTrailer, false},
		{"only a trailer", intact[len(intact)-TrailerSize:], false},
		{"empty", nil, false},
		{"the smallest intact stream", etcdStream([]byte{7}), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sum, err := Verify(bytes.NewReader(tc.stream))
			if tc.intact != (err == nil) {
				t.Fatalf("Verify: %v, want intact=%v", err, tc.intact)
			}
			if err != nil && (!errors.Is(err, ErrNotIntact) || ReasonOf(err) != ReasonChecksumMismatch) {
				t.Errorf("error %v: want ErrNotIntact with reason ChecksumMismatch", err)
			}
			want := sha256.Sum256(tc.stream)
			if sum.Size != int64(len(tc.stream)) || sum.Checksum != ChecksumPrefix+hex.EncodeToString(want[:]) {
				t.Errorf("sum %+v, want %d bytes sha256 %x", sum, len(tc.stream), want)
			}
		})
	}
}

// Writes of every size, across the trailer's boundary, give the same verdict as one write.
func TestDigestChunking(t *testing.T) {
	stream := etcdStream(randomBytes(5000, 2))
	bad := bytes.Clone(stream)
	bad[len(bad)-TrailerSize-1] ^= 0xff
	r := rand.New(rand.NewPCG(3, 3))
	for _, s := range [][]byte{stream, bad} {
		for round := 0; round < 200; round++ {
			d := NewDigest()
			for rest := s; len(rest) > 0; {
				n := min(len(rest), 1+r.IntN(3*TrailerSize))
				if round%3 == 0 {
					n = min(len(rest), 1+r.IntN(2))
				}
				_, _ = d.Write(rest[:n])
				rest = rest[n:]
			}
			if (d.Intact() == nil) != bytes.Equal(s, stream) || d.Size() != int64(len(s)) {
				t.Fatalf("round %d: intact=%v size=%d", round, d.Intact(), d.Size())
			}
		}
	}
}

type failingReader struct {
	r   io.Reader
	err error
}

func (f *failingReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err == io.EOF {
		return n, f.err
	}
	return n, err
}

func TestTee(t *testing.T) {
	stream := etcdStream(randomBytes(70_000, 4))
	t.Run("intact", func(t *testing.T) {
		tee := NewTee(bytes.NewReader(stream))
		if _, err := io.Copy(io.Discard, tee); err != nil || tee.Err() != nil {
			t.Fatalf("copy %v, tee %v", err, tee.Err())
		}
		if tee.Sum().Size != int64(len(stream)) {
			t.Errorf("size %d", tee.Sum().Size)
		}
	})
	t.Run("truncated stream ends in a mismatch, not EOF", func(t *testing.T) {
		tee := NewTee(bytes.NewReader(stream[:60_000]))
		_, err := io.Copy(io.Discard, tee)
		if ReasonOf(err) != ReasonChecksumMismatch || ReasonOf(tee.Err()) != ReasonChecksumMismatch {
			t.Fatalf("copy %v, tee %v: want ChecksumMismatch", err, tee.Err())
		}
	})
	t.Run("source error is recorded", func(t *testing.T) {
		broken := errors.New("member went away")
		tee := NewTee(&failingReader{r: bytes.NewReader(stream[:1000]), err: broken})
		_, err := io.Copy(io.Discard, tee)
		if !errors.Is(err, broken) || !errors.Is(tee.Err(), broken) {
			t.Fatalf("copy %v, tee %v", err, tee.Err())
		}
	})
}

func TestParseChecksum(t *testing.T) {
	good := "sha256:" + strings.Repeat("aB", 32)
	for _, tc := range []struct {
		in, want string
	}{
		{good, strings.ToLower(good)},
		{"sha256:" + strings.Repeat("a", 63), ""},
		{"sha256:" + strings.Repeat("g", 64), ""},
		{strings.Repeat("a", 64), ""},
		{"md5:" + strings.Repeat("a", 32), ""},
		{"", ""},
	} {
		got, err := ParseChecksum(tc.in)
		if got != tc.want || (err == nil) != (tc.want != "") {
			t.Errorf("ParseChecksum(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}
