package artifact

import (
	"io"
	"strings"
	"testing"

	"filippo.io/age"
	"filippo.io/age/armor"
)

func armorWriter(w io.Writer) io.WriteCloser { return armor.NewWriter(w) }

func TestParseKeyring(t *testing.T) {
	a, b, c := newIdentity(t), newIdentity(t), newIdentity(t)
	lines := func(ss ...string) []byte { return []byte(strings.Join(ss, "\n") + "\n") }
	cases := []struct {
		name                  string
		identities, recipient []byte
		wantWriting           []string
		wantRead              bool
		wantErr               string
	}{
		{"identities only: the newest writes", lines("# rotated 2026-12", a.String(), "", b.String()), nil,
			[]string{a.Recipient().String()}, true, ""},
		{"recipients only: a writer that cannot read", nil, lines(c.Recipient().String()),
			[]string{c.Recipient().String()}, false, ""},
		{"both: the recipients write", lines(a.String()), lines(b.Recipient().String(), c.Recipient().String()),
			[]string{b.Recipient().String(), c.Recipient().String()}, true, ""},
		{"nothing", []byte("\n# empty\n"), nil, nil, false, ErrNoKeys.Error()},
		{"a recipient among identities", lines(a.String(), c.Recipient().String()), nil, nil, false, "identities: error at line 2"},
		{"an identity among recipients", nil, lines(a.String()), nil, false, "recipients: error at line 1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			k, err := ParseKeyring(tc.identities, tc.recipient)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), a.String()) || strings.Contains(err.Error(), b.String()) {
					t.Fatalf("the error shows a key: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := RecipientNames(k.Writing()); strings.Join(got, ",") != strings.Join(tc.wantWriting, ",") {
				t.Errorf("writes to %v, want %v", got, tc.wantWriting)
			}
			if k.CanRead() != tc.wantRead {
				t.Errorf("CanRead %v, want %v", k.CanRead(), tc.wantRead)
			}
		})
	}
}

func TestEncryptionNeedsARecipient(t *testing.T) {
	if _, err := NewWriter(io.Discard, Format{Encrypted: true}, nil); err == nil {
		t.Fatal("encrypting to nobody was accepted")
	}
	if _, err := Encode(strings.NewReader("x"), Format{Encrypted: true}, []age.Recipient{}); err == nil {
		t.Fatal("encoding to nobody was accepted")
	}
}

func TestRecipientNames(t *testing.T) {
	x := newIdentity(t)
	pq, err := age.GenerateHybridIdentity()
	if err != nil {
		t.Fatal(err)
	}
	got := RecipientNames([]age.Recipient{x.Recipient(), pq.Recipient()})
	if len(got) != 2 || got[0] != x.Recipient().String() {
		t.Fatalf("names %q", got)
	}
	if !strings.HasPrefix(got[1], "age1pq1") || len(got[1]) > maxRecipientName || !strings.Contains(got[1], "sha256:") {
		t.Errorf("post-quantum recipient named %q", got[1])
	}
}
