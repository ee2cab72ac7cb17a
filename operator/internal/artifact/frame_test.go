package artifact

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"io"
	"strings"
	"testing"

	"filippo.io/age"
)

// etcdLike is a compressible body with a sha256 trailer, as etcd streams a snapshot.
func etcdLike(t *testing.T, n int) []byte {
	t.Helper()
	body := bytes.Repeat([]byte("/registry/secrets/tenant-a/token value=s3cr3t "), n/46+1)[:n]
	sum := sha256.Sum256(body)
	return append(body, sum[:]...)
}

func newIdentity(t *testing.T) *age.X25519Identity {
	t.Helper()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func encode(t *testing.T, plain []byte, f Format, to ...age.Recipient) []byte {
	t.Helper()
	var out bytes.Buffer
	w, err := NewWriter(&out, f, to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(plain); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func decode(stored []byte, ids ...age.Identity) ([]byte, Format, error) {
	r, f, err := NewReader(bytes.NewReader(stored), ids)
	if err != nil {
		return nil, f, err
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	return b, f, err
}

var formats = []Format{{}, {Compressed: true}, {Encrypted: true}, {Compressed: true, Encrypted: true}}

func TestRoundTrip(t *testing.T) {
	plain := etcdLike(t, 3<<20)
	id := newIdentity(t)
	for _, f := range formats {
		t.Run(f.String(), func(t *testing.T) {
			stored := encode(t, plain, f, id.Recipient())
			got, gotF, err := decode(stored, id)
			if err != nil {
				t.Fatal(err)
			}
			if gotF != f {
				t.Errorf("detected %s, want %s", gotF, f)
			}
			if !bytes.Equal(got, plain) {
				t.Fatalf("read back %d bytes that differ from the %d written", len(got), len(plain))
			}
			if f.Encrypted && bytes.Contains(stored, []byte("s3cr3t")) {
				t.Error("the encrypted artifact holds the plaintext")
			}
			if f.Compressed && len(stored) > len(plain)/10 {
				t.Errorf("compressed %d bytes to %d", len(plain), len(stored))
			}
			if f == (Format{}) && !bytes.Equal(stored, plain) {
				t.Error("the plain format changed the bytes")
			}
		})
	}
}

// Encode (the pipe the agent stores from) frames as NewWriter does and passes src's error on.
func TestEncode(t *testing.T) {
	plain := etcdLike(t, 1<<20)
	id := newIdentity(t)
	for _, f := range formats {
		r, err := Encode(bytes.NewReader(plain), f, []age.Recipient{id.Recipient()})
		if err != nil {
			t.Fatal(err)
		}
		stored, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		if got, _, err := decode(stored, id); err != nil || !bytes.Equal(got, plain) {
			t.Errorf("%s: read back %d bytes, err %v", f, len(got), err)
		}
	}
	broken := errors.New("stream broke")
	r, err := Encode(io.MultiReader(bytes.NewReader(plain[:1000]), errReaderOf(broken)), Format{Compressed: true, Encrypted: true},
		[]age.Recipient{id.Recipient()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(r); !errors.Is(err, broken) {
		t.Errorf("a broken source read as %v, want %v", err, broken)
	}
}

type failing struct{ err error }

func (f failing) Read([]byte) (int, error) { return 0, f.err }
func errReaderOf(err error) io.Reader      { return failing{err} }

// Keys: several recipients, a rotated list, a wrong key, none.
func TestKeys(t *testing.T) {
	plain := etcdLike(t, 64<<10)
	oldID, newID, stranger := newIdentity(t), newIdentity(t), newIdentity(t)
	f := Format{Compressed: true, Encrypted: true}
	toOld := encode(t, plain, f, oldID.Recipient())
	toBoth := encode(t, plain, f, oldID.Recipient(), newID.Recipient())
	cases := []struct {
		name    string
		stored  []byte
		ids     []age.Identity
		wantErr error
	}{
		{"the one key", toOld, []age.Identity{oldID}, nil},
		{"rotated: new key first, old one still listed", toOld, []age.Identity{newID, oldID}, nil},
		{"two recipients, the first's key", toBoth, []age.Identity{oldID}, nil},
		{"two recipients, the second's key", toBoth, []age.Identity{newID}, nil},
		{"rotated out: only the new key", toOld, []age.Identity{newID}, ErrKeyMismatch},
		{"a stranger's key", toBoth, []age.Identity{stranger}, ErrKeyMismatch},
		{"no key", toOld, nil, ErrKeyMissing},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := decode(tc.stored, tc.ids...)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			if err == nil && !bytes.Equal(got, plain) {
				t.Fatal("read back other bytes")
			}
			if errors.Is(err, ErrKeyMismatch) && !strings.Contains(err.Error(), "X25519") {
				t.Errorf("the mismatch does not say what the artifact was encrypted to: %v", err)
			}
		})
	}
}

func TestDamage(t *testing.T) {
	plain := etcdLike(t, 512<<10)
	id := newIdentity(t)
	for _, f := range formats[1:] {
		stored := encode(t, plain, f, id.Recipient())
		flipped := bytes.Clone(stored)
		flipped[len(flipped)*2/3] ^= 0x40
		for name, b := range map[string][]byte{
			"truncated mid-stream":  stored[:len(stored)/2],
			"last byte missing":     stored[:len(stored)-1],
			"a byte flipped inside": flipped,
		} {
			t.Run(f.String()+"/"+name, func(t *testing.T) {
				got, _, err := decode(b, id)
				if !errors.Is(err, ErrDamaged) {
					t.Fatalf("err %v, want %v (read %d bytes)", err, ErrDamaged, len(got))
				}
			})
		}
	}
}

// Artifacts written before encryption existed, or anything else that is not framed, read through
// unchanged: etcd's trailer check is what then judges them.
func TestPlainPassthrough(t *testing.T) {
	for name, b := range map[string][]byte{
		"etcd snapshot": etcdLike(t, 100<<10),
		"empty":         {},
		"one byte":      {0x28},
		"random":        randomBytes(t, 4096),
	} {
		t.Run(name, func(t *testing.T) {
			got, f, err := decode(b, newIdentity(t))
			if err != nil || f != (Format{}) || !bytes.Equal(got, b) {
				t.Fatalf("got %d bytes as %s, err %v; want the %d bytes as plain", len(got), f, err, len(b))
			}
		})
	}
}

// The source's own failure is not reported as damage: it is worth a retry, not a new backup.
func TestSourceErrorIsNotDamage(t *testing.T) {
	id := newIdentity(t)
	stored := encode(t, etcdLike(t, 256<<10), Format{Compressed: true, Encrypted: true}, id.Recipient())
	netErr := errors.New("connection reset by peer")
	r, _, err := NewReader(io.MultiReader(bytes.NewReader(stored[:len(stored)/2]), errReaderOf(netErr)), []age.Identity{id})
	if err == nil {
		_, err = io.ReadAll(r)
	}
	if !errors.Is(err, netErr) || errors.Is(err, ErrDamaged) {
		t.Fatalf("err %v, want the source's %v", err, netErr)
	}
}

func randomBytes(t *testing.T, n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestArmoredIsRead(t *testing.T) {
	id := newIdentity(t)
	plain := etcdLike(t, 10<<10)
	var out bytes.Buffer
	aw := armorWriter(&out)
	w, err := NewWriter(aw, Format{Encrypted: true}, []age.Recipient{id.Recipient()})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = w.Write(plain)
	_ = w.Close()
	_ = aw.Close()
	got, f, err := decode(out.Bytes(), id)
	if err != nil || !f.Encrypted || !bytes.Equal(got, plain) {
		t.Fatalf("armored: %d bytes, %s, %v", len(got), f, err)
	}
}
