package trust_test

import (
	"bytes"
	"crypto/x509"
	"strings"
	"testing"
	"time"

	"github.com/cozystack/etcd-operator/operator/internal/pki"
	"github.com/cozystack/etcd-operator/operator/internal/pki/pkitest"
	"github.com/cozystack/etcd-operator/operator/internal/trust"
)

func pair(data map[string][]byte) *trust.Pair {
	return &trust.Pair{Cert: data[pki.KeyCert], Key: data[pki.KeyKey]}
}

func TestPlanFollowsACARotationInThreeSteps(t *testing.T) {
	oldCA, newCA := pkitest.NewCA(t, "old"), pkitest.NewCA(t, "new")
	usages := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	oldLeaf := pair(oldCA.SecretData(t, []string{"a"}, nil, usages...))
	renewed := pair(oldCA.SecretData(t, []string{"a"}, nil, usages...))
	newLeaf := pair(newCA.SecretData(t, []string{"a"}, nil, usages...))
	both := trust.Merge(oldCA.PEM, newCA.PEM)
	now := time.Now()

	cases := []struct {
		name         string
		plane        trust.Plane
		trustCurrent bool
		want         trust.Kind
		wantCA       []byte
		wantCopy     []bool
	}{
		{"first copy takes the sources as they are",
			trust.Plane{SourceCA: oldCA.PEM, Leaves: []trust.Leaf{{Source: oldLeaf}}}, false,
			trust.Create, oldCA.PEM, []bool{true}},
		{"in step: nothing to do",
			trust.Plane{ActiveCA: oldCA.PEM, SourceCA: oldCA.PEM, Leaves: []trust.Leaf{{Source: oldLeaf, Active: oldLeaf}}}, true,
			trust.None, nil, []bool{false}},
		{"a renewal by a trusted CA is served at once",
			trust.Plane{ActiveCA: oldCA.PEM, SourceCA: oldCA.PEM, Leaves: []trust.Leaf{{Source: renewed, Active: oldLeaf}}}, true,
			trust.Swap, nil, []bool{true}},
		{"a renewal waits while a member still runs an older bundle",
			trust.Plane{ActiveCA: oldCA.PEM, SourceCA: oldCA.PEM, Leaves: []trust.Leaf{{Source: renewed, Active: oldLeaf}}}, false,
			trust.Wait, nil, []bool{false}},
		{"a new CA widens the bundle first and keeps the old leaf",
			trust.Plane{ActiveCA: oldCA.PEM, SourceCA: newCA.PEM, Leaves: []trust.Leaf{{Source: newLeaf, Active: oldLeaf}}}, true,
			trust.Widen, both, []bool{false}},
		{"the new leaf waits until every member trusts the widened bundle",
			trust.Plane{ActiveCA: both, SourceCA: newCA.PEM, Leaves: []trust.Leaf{{Source: newLeaf, Active: oldLeaf}}}, false,
			trust.Wait, nil, []bool{false}},
		{"then the new leaf is served",
			trust.Plane{ActiveCA: both, SourceCA: newCA.PEM, Leaves: []trust.Leaf{{Source: newLeaf, Active: oldLeaf}}}, true,
			trust.Swap, nil, []bool{true}},
		{"then the old CA leaves the bundle",
			trust.Plane{ActiveCA: both, SourceCA: newCA.PEM, Leaves: []trust.Leaf{{Source: newLeaf, Active: newLeaf}}}, true,
			trust.Narrow, newCA.PEM, []bool{false}},
		{"narrowing waits for the members too",
			trust.Plane{ActiveCA: both, SourceCA: newCA.PEM, Leaves: []trust.Leaf{{Source: newLeaf, Active: newLeaf}}}, false,
			trust.Wait, nil, []bool{false}},
		// Found by FuzzPlan: a Secret whose ca.crt does not hold its certificate's issuer.
		{"a new leaf the bundle does not verify is held, not served",
			trust.Plane{ActiveCA: oldCA.PEM, Leaves: []trust.Leaf{{Source: newLeaf}}}, true,
			trust.Hold, nil, []bool{false}},
		{"narrowing keeps the CA of a leaf about to be served",
			trust.Plane{ActiveCA: both, SourceCA: oldCA.PEM, Leaves: []trust.Leaf{{Source: oldLeaf, Active: oldLeaf}, {Source: newLeaf}}}, true,
			trust.Swap, nil, []bool{false, true}},
		{"an old CA still in a source's bundle stays",
			trust.Plane{ActiveCA: both, SourceCA: both, Leaves: []trust.Leaf{{Source: newLeaf, Active: newLeaf}}}, true,
			trust.None, nil, []bool{false}},
		{"a source that would break a member is held",
			trust.Plane{ActiveCA: oldCA.PEM, SourceCA: oldCA.PEM, Leaves: []trust.Leaf{{Source: renewed, Active: oldLeaf, SourceProblem: "lacks a"}}}, true,
			trust.Hold, nil, []bool{false}},
		{"a leaf its Secret's ca.crt does not sign is held",
			trust.Plane{ActiveCA: oldCA.PEM, SourceCA: oldCA.PEM, Leaves: []trust.Leaf{{Source: newLeaf, Active: oldLeaf}}}, true,
			trust.Hold, nil, []bool{false}},
		{"a leaf nothing serves yet is copied while the bundle widens",
			trust.Plane{ActiveCA: oldCA.PEM, SourceCA: both, Leaves: []trust.Leaf{{Source: oldLeaf, Active: oldLeaf}, {Source: newLeaf}}}, false,
			trust.Widen, both, []bool{false, true}},
		{"a leaf nothing serves yet is copied even while others wait",
			trust.Plane{ActiveCA: both, SourceCA: both, Leaves: []trust.Leaf{{Source: renewed, Active: oldLeaf}, {Source: newLeaf}}}, false,
			trust.Wait, nil, []bool{false, true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := trust.Plan(tc.plane, tc.trustCurrent, now)
			if d.Kind != tc.want {
				t.Fatalf("kind %v, want %v (held: %q)", d.Kind, tc.want, d.Held)
			}
			if !bytes.Equal(d.CA, tc.wantCA) {
				t.Errorf("CA %q, want %q", trust.Subjects(d.CA), trust.Subjects(tc.wantCA))
			}
			for i, w := range tc.wantCopy {
				if d.Copy[i] != w {
					t.Errorf("copy[%d] = %v, want %v", i, d.Copy[i], w)
				}
			}
		})
	}
}

func TestMergeIsStableAndDeduplicates(t *testing.T) {
	a, b := pkitest.NewCA(t, "a"), pkitest.NewCA(t, "b")
	ab := trust.Merge(a.PEM, b.PEM)
	if got := trust.Subjects(ab); len(got) != 2 || got[0] != "CN=a" || got[1] != "CN=b" {
		t.Fatalf("Merge(a, b) = %v", got)
	}
	if !bytes.Equal(trust.Merge(ab, a.PEM), ab) || !bytes.Equal(trust.Merge(ab, nil), ab) {
		t.Error("merging certificates already present changed the bundle")
	}
}

func TestDescribeTellsSameNamedCAsApart(t *testing.T) {
	a, b := pkitest.NewCA(t, "etcd-ca"), pkitest.NewCA(t, "etcd-ca")
	parts := strings.Split(trust.Describe(trust.Merge(a.PEM, b.PEM)), ", ")
	if len(parts) != 2 || parts[0] == parts[1] || !strings.HasPrefix(parts[0], "CN=etcd-ca (serial ") {
		t.Fatalf("Describe = %q", parts)
	}
}
