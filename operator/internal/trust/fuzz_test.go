package trust_test

import (
	"bytes"
	"crypto/x509"
	"testing"
	"time"

	"github.com/cozystack/etcd-operator/operator/internal/pki/pkitest"
	"github.com/cozystack/etcd-operator/operator/internal/trust"
)

// FuzzPlan: from any valid plane (every served leaf chains to the bundle members trust), the
// plan never makes members distrust what is served: after its step the bundle still verifies
// every leaf served (the ones kept and the ones copied); widening never drops a CA; leaves
// move and CAs leave only once every member trusts the current bundle.
func FuzzPlan(f *testing.F) {
	now := time.Now()
	cas := []*pkitest.CA{pkitest.NewCA(f, "a"), pkitest.NewCA(f, "b"), pkitest.NewCA(f, "c")}
	usages := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	leaves := make([]*trust.Pair, len(cas))
	for i, ca := range cas {
		leaves[i] = pair(ca.SecretData(f, []string{"m"}, nil, usages...))
	}
	bundle := func(mask byte) []byte {
		var out []byte
		for i, ca := range cas {
			if mask&(1<<i) != 0 {
				out = trust.Merge(out, ca.PEM)
			}
		}
		return out
	}
	leaf := func(b byte) *trust.Pair { // 0: none, 1..3: the leaf of CA b-1
		if b%4 == 0 {
			return nil
		}
		return leaves[b%4-1]
	}
	for _, seed := range [][]byte{
		{1, 1, 1, 0x11, 0}, // in step
		{1, 2, 1, 0x21, 0}, // a new CA arrives
		{3, 2, 1, 0x21, 0}, // widened; the member trusts both
		{3, 2, 1, 0x22, 0}, // swapped
		{7, 4, 2, 0x31, 0x12, 1},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 3 {
			return
		}
		p := trust.Plane{ActiveCA: bundle(data[0] & 7), SourceCA: bundle(data[1] & 7)}
		trustCurrent := data[2]&1 != 0
		for _, b := range data[3:min(len(data), 6)] {
			l := trust.Leaf{Source: leaf(b >> 4), Active: leaf(b)}
			if b&0x08 != 0 {
				l.SourceProblem = "held by the test"
			}
			p.Leaves = append(p.Leaves, l)
		}
		if p.ActiveCA == nil {
			return // the first copy serves the sources as they are
		}
		for _, l := range p.Leaves {
			if l.Active != nil && !trust.Verifies(p.ActiveCA, l.Active.Cert, now) {
				return // not a state the operator reaches: a served leaf its members do not trust
			}
		}
		d := trust.Plan(p, trustCurrent, now)
		after := p.ActiveCA
		if d.CA != nil {
			after = d.CA
		}
		for i, l := range p.Leaves {
			served := l.Active
			if i < len(d.Copy) && d.Copy[i] {
				served = l.Source
				if served == nil {
					t.Fatalf("%s copies leaf %d from a missing source", d.Kind, i)
				}
				// A leaf nothing served before may start at once; one replacing a served leaf
				// moves only once every member loaded the bundle that trusts it.
				if l.Active != nil && !trustCurrent {
					t.Fatalf("%s replaced served leaf %d while a member runs an older bundle", d.Kind, i)
				}
			}
			if served != nil && !trust.Verifies(after, served.Cert, now) {
				t.Fatalf("%s: leaf %d served under a bundle that does not verify it (active %x, source %x)", d.Kind, i, data[0]&7, data[1]&7)
			}
		}
		switch d.Kind {
		case trust.Widen:
			for _, ca := range cas {
				if trust.Verifies(p.ActiveCA, leaves[indexOf(cas, ca)].Cert, now) && !trust.Verifies(d.CA, leaves[indexOf(cas, ca)].Cert, now) {
					t.Fatalf("Widen dropped CA %s", ca.PEM[:20])
				}
			}
		case trust.Narrow:
			if !trustCurrent {
				t.Fatal("Narrow while a member runs an older bundle")
			}
			if bytes.Equal(d.CA, p.ActiveCA) {
				t.Fatal("Narrow without a change")
			}
		}
	})
}

func indexOf(cas []*pkitest.CA, ca *pkitest.CA) int {
	for i, c := range cas {
		if c == ca {
			return i
		}
	}
	return -1
}
