package pki

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Secret keys of TLS material, as cert-manager and kubernetes.io/tls Secrets have them.
const (
	KeyCert = corev1.TLSCertKey       // tls.crt: the leaf, optionally followed by intermediates
	KeyKey  = corev1.TLSPrivateKeyKey // tls.key
	KeyCA   = "ca.crt"                // the trust bundle
)

// Usage is an extended key usage etcd needs a certificate to carry.
type Usage string

const (
	// UsageServerAuth lets the certificate be served (client and peer listeners).
	UsageServerAuth Usage = "server auth"
	// UsageClientAuth lets the certificate be presented as a client: by peers to each other,
	// by etcd's grpc-gateway to its own listener, by the operator.
	UsageClientAuth Usage = "client auth"
)

var extKeyUsages = map[Usage]x509.ExtKeyUsage{
	UsageServerAuth: x509.ExtKeyUsageServerAuth,
	UsageClientAuth: x509.ExtKeyUsageClientAuth,
}

// Requirement is what a certificate must satisfy for one use (one member's server or peer
// certificate, or the operator's client certificate).
type Requirement struct {
	// What names the certificate in messages, e.g. `server certificate (Secret "etcd-server-tls")`.
	What string
	// Names must each be covered by a SAN (wildcards in the certificate count, as in TLS).
	Names Names
	// PeerClient, when set, is what etcd's peers check of the certificate presented as a client.
	PeerClient *PeerClient
	// Usages must each be present in the certificate's extended key usage.
	Usages []Usage
	// Now is the validity instant; zero means time.Now().
	Now time.Time
	// MinRemaining fails a certificate that expires sooner than this after Now (0 = only
	// expired certificates fail).
	MinRemaining time.Duration
}

// ProblemKind classifies what is wrong with a certificate, so callers can pick a condition
// reason without parsing messages.
type ProblemKind string

const (
	ProblemMalformed    ProblemKind = "Malformed"
	ProblemKeyMismatch  ProblemKind = "KeyMismatch"
	ProblemMissingSAN   ProblemKind = "MissingSAN"
	ProblemUntrusted    ProblemKind = "Untrusted"
	ProblemExpired      ProblemKind = "Expired"
	ProblemNotYetValid  ProblemKind = "NotYetValid"
	ProblemMissingUsage ProblemKind = "MissingUsage"
)

// Problem is one failed check.
type Problem struct {
	Kind    ProblemKind
	Message string
}

// ValidationError lists every problem found with one certificate, in a stable order.
type ValidationError struct {
	What     string
	Problems []Problem
	// MissingSANs are the required names no SAN of the certificate covers.
	MissingSANs []string
}

func (e *ValidationError) Error() string {
	msgs := make([]string, 0, len(e.Problems))
	for _, p := range e.Problems {
		msgs = append(msgs, p.Message)
	}
	return fmt.Sprintf("%s: %s", e.What, strings.Join(msgs, "; "))
}

// Has reports whether a problem of kind k was found.
func (e *ValidationError) Has(k ProblemKind) bool {
	return slices.ContainsFunc(e.Problems, func(p Problem) bool { return p.Kind == k })
}

// AsValidationError returns the ValidationError inside err, if any.
func AsValidationError(err error) (*ValidationError, bool) {
	var v *ValidationError
	ok := errors.As(err, &v)
	return v, ok
}

// ValidateSecretData checks the tls.crt, tls.key and ca.crt of a TLS Secret against r: the
// three keys are present, the key matches the certificate, and the certificate passes
// Validate against the Secret's own ca.crt.
func ValidateSecretData(data map[string][]byte, r Requirement) error {
	var missing []string
	for _, k := range []string{KeyCert, KeyKey, KeyCA} {
		if len(bytes.TrimSpace(data[k])) == 0 {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return &ValidationError{What: r.What, Problems: []Problem{{ProblemMalformed,
			fmt.Sprintf("Secret has no %s", strings.Join(missing, ", "))}}}
	}
	if _, err := tls.X509KeyPair(data[KeyCert], data[KeyKey]); err != nil {
		return &ValidationError{What: r.What, Problems: []Problem{{ProblemKeyMismatch,
			fmt.Sprintf("%s and %s do not form a key pair: %v", KeyKey, KeyCert, err)}}}
	}
	return Validate(data[KeyCert], data[KeyCA], r)
}

// Validate checks a PEM leaf certificate (optionally followed by intermediates) against a PEM
// trust bundle and r. It returns nil, or a *ValidationError that names every missing SAN and
// usage, a chain that does not lead to the bundle, and an expired or not yet valid leaf.
func Validate(certPEM, caPEM []byte, r Requirement) error {
	now := r.Now
	if now.IsZero() {
		now = time.Now()
	}
	fail := func(kind ProblemKind, format string, a ...any) error {
		return &ValidationError{What: r.What, Problems: []Problem{{kind, fmt.Sprintf(format, a...)}}}
	}
	chain, err := parseCerts(certPEM)
	if err != nil {
		return fail(ProblemMalformed, "%s: %v", KeyCert, err)
	}
	roots, err := parseCerts(caPEM)
	if err != nil {
		return fail(ProblemMalformed, "%s: %v", KeyCA, err)
	}
	leaf := chain[0]
	var probs []Problem
	add := func(kind ProblemKind, format string, a ...any) {
		probs = append(probs, Problem{kind, fmt.Sprintf(format, a...)})
	}
	missing := missingNames(leaf, r.Names)
	if len(missing) > 0 {
		add(ProblemMissingSAN, "does not cover %s (certificate SANs: %s)", quoteAll(missing), describeSANs(leaf))
	}
	if r.PeerClient != nil && !r.PeerClient.accepts(leaf) {
		add(ProblemMissingSAN, "%s (certificate SANs: %s)", r.PeerClient.problem(), describeSANs(leaf))
	}
	for _, u := range r.Usages {
		if !hasExtKeyUsage(leaf, extKeyUsages[u]) {
			add(ProblemMissingUsage, "lacks extended key usage %q", u)
		}
	}
	switch {
	case now.After(leaf.NotAfter):
		add(ProblemExpired, "expired at %s", leaf.NotAfter.UTC().Format(time.RFC3339))
	case now.Before(leaf.NotBefore):
		add(ProblemNotYetValid, "not valid before %s", leaf.NotBefore.UTC().Format(time.RFC3339))
	case r.MinRemaining > 0 && leaf.NotAfter.Sub(now) < r.MinRemaining:
		add(ProblemExpired, "expires at %s, in less than %s", leaf.NotAfter.UTC().Format(time.RFC3339), r.MinRemaining)
	}
	if err := verifyChain(chain, roots, now); err != nil {
		add(ProblemUntrusted, "%v", err)
	}
	if len(probs) == 0 {
		return nil
	}
	return &ValidationError{What: r.What, Problems: probs, MissingSANs: missing}
}

func parseCerts(data []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for rest := data; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certificate %d: %w", len(out)+1, err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New("no PEM certificate found")
	}
	return out, nil
}

// missingNames are the wanted names no SAN covers. x509's VerifyHostname applies TLS's
// rules: one wildcard label on the left, IPs only against IP SANs.
func missingNames(leaf *x509.Certificate, want Names) []string {
	var out []string
	for _, n := range want.DNS {
		if leaf.VerifyHostname(n) != nil {
			out = append(out, n)
		}
	}
	for _, ip := range want.IPs {
		if leaf.VerifyHostname(ip.String()) != nil {
			out = append(out, ip.String())
		}
	}
	return out
}

// hasExtKeyUsage applies the rule of Go's crypto/x509 verification, which etcd's TLS listeners
// and clients use: a certificate without the extended key usage extension may be used for any
// purpose; with it, the usage (or anyExtendedKeyUsage) must be listed. An extension holding only
// usages Go does not know (UnknownExtKeyUsage) lists neither server nor client auth.
func hasExtKeyUsage(c *x509.Certificate, u x509.ExtKeyUsage) bool {
	if len(c.ExtKeyUsage) == 0 && len(c.UnknownExtKeyUsage) == 0 {
		return true
	}
	return slices.Contains(c.ExtKeyUsage, u) || slices.Contains(c.ExtKeyUsage, x509.ExtKeyUsageAny)
}

// verifyChain checks that the leaf chains to one of the roots through the intermediates that
// follow it. The leaf's own validity and usages are reported separately with clearer
// messages, so the chain is checked at an instant inside the leaf's validity window: an
// expired leaf that also chains to the wrong CA gets both problems named.
func verifyChain(chain, roots []*x509.Certificate, now time.Time) error {
	leaf := chain[0]
	if now.After(leaf.NotAfter) {
		now = leaf.NotAfter
	} else if now.Before(leaf.NotBefore) {
		now = leaf.NotBefore
	}
	pool, inter := x509.NewCertPool(), x509.NewCertPool()
	for _, c := range roots {
		pool.AddCert(c)
	}
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	_, err := leaf.Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter, CurrentTime: now,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
	if err == nil {
		return nil
	}
	var unknown x509.UnknownAuthorityError
	if errors.As(err, &unknown) {
		return fmt.Errorf("does not chain to %s (issuer %q; %s holds %s)", KeyCA, leaf.Issuer.String(), KeyCA, describeSubjects(roots))
	}
	return fmt.Errorf("chain to %s: %v", KeyCA, err)
}

func quoteAll(ss []string) string {
	out := make([]string, 0, len(ss))
	for _, s := range ss {
		out = append(out, fmt.Sprintf("%q", s))
	}
	return strings.Join(out, ", ")
}

func describeSANs(c *x509.Certificate) string {
	var all []string
	all = append(all, c.DNSNames...)
	for _, ip := range c.IPAddresses {
		all = append(all, ip.String())
	}
	if len(all) == 0 {
		return "none"
	}
	return strings.Join(all, ", ")
}

func describeSubjects(cs []*x509.Certificate) string {
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, fmt.Sprintf("%q", c.Subject.String()))
	}
	return strings.Join(out, ", ")
}
