// Package trust decides how a TLS plane's trust bundle and served certificates follow their
// sources (cert-manager's or the user's Secrets) without a member ever distrusting another.
//
// etcd loads its trusted CAs once, at start, but re-reads its own key pair on every handshake.
// So a renewed leaf signed by an already-trusted CA can be served at once, while a leaf from a
// new CA may only be served after every member has been restarted with a bundle that trusts
// that CA. The operator therefore keeps its own copy of each plane (the "active" Secrets and a
// trust bundle) and moves it in three steps, one per pass:
//
//  1. Widen: add the sources' new CAs to the bundle. Members are rolled onto it one at a time.
//  2. Swap: once every running member trusts the bundle, serve the sources' new leaves.
//  3. Narrow: once no served leaf and no source needs an old CA, drop it (another rollout).
package trust

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"
	"time"
)

// Pair is a certificate (PEM, leaf first) and its key.
type Pair struct {
	Cert, Key []byte
}

// Leaf is one certificate of a plane: the source it should follow and the copy being served.
type Leaf struct {
	// Source is the Secret's current pair; nil while the Secret does not exist.
	Source *Pair
	// Active is the pair being served; nil before the first copy.
	Active *Pair
	// SourceProblem, when not empty, says why the source pair may not replace the active one
	// (it would break a member the active pair serves); the source is held.
	SourceProblem string
}

// Plane is one TLS plane's state: the bundle members trust and the leaves they serve.
type Plane struct {
	// ActiveCA is the bundle being trusted (PEM); nil before the plane's first copy.
	ActiveCA []byte
	// SourceCA is the union of the sources' ca.crt (PEM).
	SourceCA []byte
	Leaves   []Leaf
}

// Kind is what a plan does.
type Kind int

const (
	// None: the plane follows its sources.
	None Kind = iota
	// Create: the plane's first copy, taken from the sources as they are.
	Create
	// Widen: new CAs join the bundle; leaves stay until members trust them.
	Widen
	// Swap: new leaves are served; every member already trusts them.
	Swap
	// Narrow: CAs nothing needs any more leave the bundle.
	Narrow
	// Wait: a change is pending until every member runs the current bundle.
	Wait
	// Hold: a source pair cannot be served (see Decision.Held).
	Hold
)

func (k Kind) String() string {
	return [...]string{"None", "Create", "Widen", "Swap", "Narrow", "Wait", "Hold"}[k]
}

// Decision is the next step of a plane.
type Decision struct {
	Kind Kind
	// CA is the bundle to write (PEM); nil leaves it unchanged.
	CA []byte
	// Copy marks the leaves (by index) whose source replaces the active pair.
	Copy []bool
	// Held names why a source is not served, for Hold.
	Held string
}

// Plan is the next step of plane p. trustCurrent says every running member loaded ActiveCA.
func Plan(p Plane, trustCurrent bool, now time.Time) Decision {
	copyAll := make([]bool, len(p.Leaves))
	if p.ActiveCA == nil {
		for i, l := range p.Leaves {
			copyAll[i] = l.Source != nil
		}
		return Decision{Kind: Create, CA: Merge(nil, p.SourceCA), Copy: copyAll}
	}
	if union := Merge(p.ActiveCA, p.SourceCA); !bytes.Equal(union, p.ActiveCA) {
		// Leaves that nothing serves yet can be copied now: no member uses them.
		copyNew, _ := missing(p.Leaves, union, now)
		return Decision{Kind: Widen, CA: union, Copy: copyNew}
	}
	copyNew, unservable := missing(p.Leaves, p.ActiveCA, now)
	d := Decision{Kind: None, Copy: copyNew}
	for i, l := range p.Leaves {
		if l.Source == nil || l.Active == nil || pairEqual(*l.Source, *l.Active) {
			continue
		}
		switch {
		case l.SourceProblem != "":
			return Decision{Kind: Hold, Held: l.SourceProblem, Copy: d.Copy}
		case !Verifies(p.ActiveCA, l.Source.Cert, now):
			return Decision{Kind: Hold, Held: "its certificate does not chain to a CA in its Secret's ca.crt", Copy: d.Copy}
		case !trustCurrent:
			d.Kind = Wait
		default:
			d.Kind, d.Copy[i] = Swap, true
		}
	}
	if d.Kind != None {
		return d
	}
	if keep := needed(p, d.Copy, now); !bytes.Equal(keep, p.ActiveCA) {
		if !trustCurrent {
			return Decision{Kind: Wait, Copy: d.Copy}
		}
		return Decision{Kind: Narrow, CA: keep, Copy: d.Copy}
	}
	if unservable != "" {
		return Decision{Kind: Hold, Held: unservable, Copy: d.Copy}
	}
	if anyTrue(d.Copy) {
		d.Kind = Swap
	}
	return d
}

// needed is the part of the active bundle still in use: CAs in a source's ca.crt, or that
// verify a served leaf or one about to be served (copying marks those).
func needed(p Plane, copying []bool, now time.Time) []byte {
	var source [][]byte
	for _, c := range certs(p.SourceCA) {
		source = append(source, c.Raw)
	}
	var out [][]byte
	for _, ca := range certs(p.ActiveCA) {
		keep := contains(source, ca.Raw)
		for i, l := range p.Leaves {
			served := l.Active
			if i < len(copying) && copying[i] {
				served = l.Source
			}
			if !keep && served != nil && Verifies(encode(ca), served.Cert, now) {
				keep = true
			}
		}
		if keep {
			out = append(out, ca.Raw)
		}
	}
	if len(out) == 0 { // nothing parsed: leave the bundle as it is rather than empty it
		return p.ActiveCA
	}
	return encodeAll(out)
}

// Merge returns the certificates of a followed by those of b that a lacks, as PEM, in a stable
// order (so an unchanged union is byte-equal and writes nothing).
func Merge(a, b []byte) []byte {
	var out [][]byte
	for _, c := range append(certs(a), certs(b)...) {
		if !contains(out, c.Raw) {
			out = append(out, c.Raw)
		}
	}
	if len(out) == 0 {
		return bytes.Clone(a)
	}
	return encodeAll(out)
}

// Verifies reports whether the leaf of certPEM (with any intermediates after it) chains to a CA
// in bundle, for any key usage.
func Verifies(bundle, certPEM []byte, now time.Time) bool {
	chain := certs(certPEM)
	if len(chain) == 0 {
		return false
	}
	roots, inter := x509.NewCertPool(), x509.NewCertPool()
	for _, c := range certs(bundle) {
		roots.AddCert(c)
	}
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	_, err := chain[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, CurrentTime: now,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
	return err == nil
}

// Subjects lists a bundle's certificates by subject, for Events.
func Subjects(bundle []byte) []string {
	var out []string
	for _, c := range certs(bundle) {
		out = append(out, c.Subject.String())
	}
	return out
}

// Describe names a bundle's certificates for Events: subject and serial, since a rotated CA
// usually keeps its subject.
func Describe(bundle []byte) string {
	var out []string
	for _, c := range certs(bundle) {
		serial := c.SerialNumber.Text(16)
		out = append(out, fmt.Sprintf("%s (serial %s)", c.Subject, serial[:min(len(serial), 12)]))
	}
	return strings.Join(out, ", ")
}

func certs(data []byte) []*x509.Certificate {
	var out []*x509.Certificate
	for len(data) > 0 {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		if c, err := x509.ParseCertificate(b.Bytes); err == nil {
			out = append(out, c)
		}
	}
	return out
}

func contains(list [][]byte, raw []byte) bool {
	for _, r := range list {
		if bytes.Equal(r, raw) {
			return true
		}
	}
	return false
}

func encode(c *x509.Certificate) []byte { return encodeAll([][]byte{c.Raw}) }

func encodeAll(raws [][]byte) []byte {
	var buf bytes.Buffer
	for _, r := range raws {
		_ = pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: r})
	}
	return buf.Bytes()
}

func pairEqual(a, b Pair) bool { return bytes.Equal(a.Cert, b.Cert) && bytes.Equal(a.Key, b.Key) }

// missing marks the leaves nothing serves yet whose source the bundle verifies: they can be
// served at once. One the bundle does not verify is not copied (its peers would refuse it);
// unservable says why.
func missing(ls []Leaf, bundle []byte, now time.Time) (out []bool, unservable string) {
	out = make([]bool, len(ls))
	for i, l := range ls {
		if l.Active != nil || l.Source == nil {
			continue
		}
		if out[i] = Verifies(bundle, l.Source.Cert, now); !out[i] {
			unservable = "its certificate does not chain to a CA in its Secret's ca.crt"
		}
	}
	return out, unservable
}

func anyTrue(bs []bool) bool {
	for _, b := range bs {
		if b {
			return true
		}
	}
	return false
}
