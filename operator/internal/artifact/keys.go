package artifact

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"filippo.io/age"
)

// Keyring is what an encryption Secret holds: identities, newest first, to read artifacts with,
// and the recipients new artifacts are written to.
type Keyring struct {
	Identities []age.Identity
	// Recipients are the explicit ones (the Secret's recipients); see Writing.
	Recipients []age.Recipient
}

// ErrNoKeys is a keyring with neither identities nor recipients.
var ErrNoKeys = errors.New("no age identity (AGE-SECRET-KEY-…) or recipient (age1…) found")

// ParseKeyring reads identities and recipients, one per line (blank lines and # comments are
// skipped); either may be empty, not both. Errors name the line, never the key.
func ParseKeyring(identities, recipients []byte) (Keyring, error) {
	var k Keyring
	var err error
	if hasKeys(identities) {
		if k.Identities, err = age.ParseIdentities(bytes.NewReader(identities)); err != nil {
			return k, fmt.Errorf("identities: %w", err)
		}
	}
	if hasKeys(recipients) {
		if k.Recipients, err = age.ParseRecipients(bytes.NewReader(recipients)); err != nil {
			return k, fmt.Errorf("recipients: %w", err)
		}
	}
	if len(k.Identities) == 0 && len(k.Recipients) == 0 {
		return k, ErrNoKeys
	}
	return k, nil
}

// Writing is whom a new artifact is encrypted to: the explicit recipients when there are any
// (a writer that should not be able to read backups holds only those), else the newest
// identity's recipient. Older identities are for reading only, so that a rotated-out key
// decrypts nothing written after the rotation.
func (k Keyring) Writing() []age.Recipient {
	if len(k.Recipients) > 0 {
		return k.Recipients
	}
	if len(k.Identities) == 0 {
		return nil
	}
	if r := recipientOf(k.Identities[0]); r != nil {
		return []age.Recipient{r}
	}
	return nil
}

// CanRead reports whether the keyring holds any identity.
func (k Keyring) CanRead() bool { return len(k.Identities) > 0 }

func recipientOf(id age.Identity) age.Recipient {
	switch i := id.(type) {
	case *age.X25519Identity:
		return i.Recipient()
	case *age.HybridIdentity:
		return i.Recipient()
	}
	return nil
}

// RecipientNames are the public keys (age1…) of rs: what status records of an encrypted
// artifact, to be compared with `age-keygen -y` of a candidate identity. A post-quantum
// recipient (age1pq1…, about 2,000 characters) is shortened to its start and the sha256 of the
// whole, so that a few of them fit an agent's 4096-byte result.
func RecipientNames(rs []age.Recipient) []string {
	out := make([]string, 0, len(rs))
	for _, r := range rs {
		s, ok := r.(fmt.Stringer)
		if !ok {
			continue
		}
		name := s.String()
		if len(name) > maxRecipientName {
			sum := sha256.Sum256([]byte(name))
			name = name[:16] + "…sha256:" + hex.EncodeToString(sum[:8])
		}
		out = append(out, name)
	}
	return out
}

// maxRecipientName is longer than an X25519 recipient (62 characters).
const maxRecipientName = 100

// hasKeys reports a line that is neither blank nor a comment.
func hasKeys(b []byte) bool {
	for _, line := range bytes.Split(b, []byte("\n")) {
		if line = bytes.TrimSpace(line); len(line) > 0 && line[0] != '#' {
			return true
		}
	}
	return false
}
