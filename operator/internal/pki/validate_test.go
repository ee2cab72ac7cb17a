package pki

import (
	"bytes"
	"crypto/x509"
	"net"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	ca := newCA(t, "etcd-ca")
	otherCA := newCA(t, "other-ca")
	inter := issue(t, leafSpec{cn: "etcd-intermediate", isCA: true}, &ca)
	member := Names{DNS: []string{"etcd-0.etcd.ns.svc", "etcd-0.etcd.ns.svc.cluster.local", "localhost"}, IPs: []net.IP{LoopbackIP}}
	full := leafSpec{cn: "etcd-server", dns: []string{"*.etcd.ns.svc", "*.etcd.ns.svc.cluster.local", "localhost"},
		ips: []net.IP{LoopbackIP}, usages: bothUsages}
	with := func(mod func(*leafSpec)) leafSpec {
		s := full
		mod(&s)
		return s
	}
	both := []Usage{UsageServerAuth, UsageClientAuth}
	pinned := issue(t, full, &otherCA)
	tests := []struct {
		name    string
		cert    []byte // tls.crt
		ca      []byte // ca.crt
		req     Requirement
		kinds   []ProblemKind
		message string // the whole error, when set
		missing []string
	}{{
		name: "valid",
		cert: issue(t, full, &ca).pem,
		ca:   ca.pem,
		req:  Requirement{Names: member, Usages: both},
	}, {
		name:    "missing FQDN wildcard",
		cert:    issue(t, with(func(s *leafSpec) { s.dns = []string{"*.etcd.ns.svc", "localhost"} }), &ca).pem,
		ca:      ca.pem,
		req:     Requirement{What: `server certificate of member etcd-0 (Secret "etcd-tls")`, Names: member, Usages: both},
		kinds:   []ProblemKind{ProblemMissingSAN},
		message: `server certificate of member etcd-0 (Secret "etcd-tls"): does not cover "etcd-0.etcd.ns.svc.cluster.local" (certificate SANs: *.etcd.ns.svc, localhost, 127.0.0.1)`,
		missing: []string{"etcd-0.etcd.ns.svc.cluster.local"},
	}, {
		name:    "enumerated members do not cover a replacement",
		cert:    issue(t, with(func(s *leafSpec) { s.dns = []string{"etcd-1.etcd.ns.svc", "etcd-2.etcd.ns.svc"}; s.ips = nil }), &ca).pem,
		ca:      ca.pem,
		req:     Requirement{What: "peer", Names: member, Usages: both},
		kinds:   []ProblemKind{ProblemMissingSAN},
		message: `peer: does not cover "etcd-0.etcd.ns.svc", "etcd-0.etcd.ns.svc.cluster.local", "localhost", "127.0.0.1" (certificate SANs: etcd-1.etcd.ns.svc, etcd-2.etcd.ns.svc)`,
		missing: []string{"etcd-0.etcd.ns.svc", "etcd-0.etcd.ns.svc.cluster.local", "localhost", "127.0.0.1"},
	}, {
		name:    "wildcard covers one label only",
		cert:    issue(t, with(func(s *leafSpec) { s.dns = []string{"*.ns.svc"}; s.ips = nil }), &ca).pem,
		ca:      ca.pem,
		req:     Requirement{What: "peer", Names: Names{DNS: []string{"etcd-0.etcd.ns.svc"}}},
		kinds:   []ProblemKind{ProblemMissingSAN},
		missing: []string{"etcd-0.etcd.ns.svc"},
	}, {
		name:    "issued by another CA",
		cert:    issue(t, full, &otherCA).pem,
		ca:      ca.pem,
		req:     Requirement{What: "server", Names: member, Usages: both},
		kinds:   []ProblemKind{ProblemUntrusted},
		message: `server: does not chain to ca.crt (issuer "CN=other-ca"; ca.crt holds "CN=etcd-ca")`,
	}, {
		name: "bundle with both CAs trusts either",
		cert: issue(t, full, &otherCA).pem,
		ca:   concat(ca.pem, otherCA.pem),
		req:  Requirement{Names: member, Usages: both},
	}, {
		// Go's TLS stack (etcd's) trusts a certificate that is itself in the trust bundle, so a
		// leaf pinned in ca.crt works in etcd and is accepted here too.
		name: "leaf pinned as its own trust anchor",
		cert: pinned.pem,
		ca:   pinned.pem,
		req:  Requirement{Names: member, Usages: both},
	}, {
		name:  "another leaf of the same CA is no trust anchor",
		cert:  pinned.pem,
		ca:    issue(t, full, &otherCA).pem,
		req:   Requirement{Names: member, Usages: both},
		kinds: []ProblemKind{ProblemUntrusted},
	}, {
		name: "intermediate in tls.crt",
		cert: concat(issue(t, full, &inter).pem, inter.pem),
		ca:   ca.pem,
		req:  Requirement{Names: member, Usages: both},
	}, {
		name:  "intermediate missing",
		cert:  issue(t, full, &inter).pem,
		ca:    ca.pem,
		req:   Requirement{Names: member, Usages: both},
		kinds: []ProblemKind{ProblemUntrusted},
	}, {
		name:    "expired",
		cert:    issue(t, with(func(s *leafSpec) { s.notAfter = testNow.Add(-time.Hour) }), &ca).pem,
		ca:      ca.pem,
		req:     Requirement{What: "server", Names: member, Usages: both},
		kinds:   []ProblemKind{ProblemExpired},
		message: "server: expired at 2026-06-01T11:00:00Z",
	}, {
		name:    "not yet valid",
		cert:    issue(t, with(func(s *leafSpec) { s.notBefore = testNow.Add(time.Hour) }), &ca).pem,
		ca:      ca.pem,
		req:     Requirement{What: "server", Names: member, Usages: both},
		kinds:   []ProblemKind{ProblemNotYetValid},
		message: "server: not valid before 2026-06-01T13:00:00Z",
	}, {
		name:    "expires within the required margin",
		cert:    issue(t, with(func(s *leafSpec) { s.notAfter = testNow.Add(time.Hour) }), &ca).pem,
		ca:      ca.pem,
		req:     Requirement{What: "server", Names: member, Usages: both, MinRemaining: 2 * time.Hour},
		kinds:   []ProblemKind{ProblemExpired},
		message: "server: expires at 2026-06-01T13:00:00Z, in less than 2h0m0s",
	}, {
		name:    "server auth only",
		cert:    issue(t, with(func(s *leafSpec) { s.usages = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth} }), &ca).pem,
		ca:      ca.pem,
		req:     Requirement{What: "peer", Names: member, Usages: both},
		kinds:   []ProblemKind{ProblemMissingUsage},
		message: `peer: lacks extended key usage "client auth"`,
	}, {
		// Go's verifier (and so etcd) treats a leaf without the extension as good for any use.
		name: "no extended key usage extension satisfies both",
		cert: issue(t, with(func(s *leafSpec) { s.usages = nil }), &ca).pem,
		ca:   ca.pem,
		req:  Requirement{Names: member, Usages: both},
	}, {
		name:    "client auth only",
		cert:    issue(t, with(func(s *leafSpec) { s.usages = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth} }), &ca).pem,
		ca:      ca.pem,
		req:     Requirement{What: "server", Names: member, Usages: both},
		kinds:   []ProblemKind{ProblemMissingUsage},
		message: `server: lacks extended key usage "server auth"`,
	}, {
		name: "any usage satisfies both",
		cert: issue(t, with(func(s *leafSpec) { s.usages = []x509.ExtKeyUsage{x509.ExtKeyUsageAny} }), &ca).pem,
		ca:   ca.pem,
		req:  Requirement{Names: member, Usages: both},
	}, {
		name: "every problem at once",
		cert: issue(t, with(func(s *leafSpec) {
			s.dns = nil
			s.ips = nil
			s.usages = []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning}
			s.notAfter = testNow.Add(-time.Hour)
		}), &otherCA).pem,
		ca:    ca.pem,
		req:   Requirement{What: "server", Names: member, Usages: both},
		kinds: []ProblemKind{ProblemMissingSAN, ProblemMissingUsage, ProblemMissingUsage, ProblemExpired, ProblemUntrusted},
		message: `server: does not cover "etcd-0.etcd.ns.svc", "etcd-0.etcd.ns.svc.cluster.local", "localhost", "127.0.0.1" (certificate SANs: none); ` +
			`lacks extended key usage "server auth"; lacks extended key usage "client auth"; expired at 2026-06-01T11:00:00Z; ` +
			`does not chain to ca.crt (issuer "CN=other-ca"; ca.crt holds "CN=etcd-ca")`,
		missing: []string{"etcd-0.etcd.ns.svc", "etcd-0.etcd.ns.svc.cluster.local", "localhost", "127.0.0.1"},
	}, {
		name:    "tls.crt is not PEM",
		cert:    []byte("not a certificate"),
		ca:      ca.pem,
		req:     Requirement{What: "server"},
		kinds:   []ProblemKind{ProblemMalformed},
		message: "server: tls.crt: no PEM certificate found",
	}, {
		name:    "ca.crt is empty",
		cert:    issue(t, full, &ca).pem,
		req:     Requirement{What: "server"},
		kinds:   []ProblemKind{ProblemMalformed},
		message: "server: ca.crt: no PEM certificate found",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.req.Now = testNow
			err := Validate(tt.cert, tt.ca, tt.req)
			assertProblems(t, err, tt.kinds, tt.message)
			if v, ok := AsValidationError(err); ok && !slices.Equal(v.MissingSANs, tt.missing) {
				t.Errorf("MissingSANs = %q, want %q", v.MissingSANs, tt.missing)
			}
		})
	}
}

func TestValidateSecretData(t *testing.T) {
	ca := newCA(t, "etcd-ca")
	leaf := issue(t, leafSpec{cn: "c", dns: []string{"*.etcd.ns.svc"}, usages: bothUsages}, &ca)
	other := issue(t, leafSpec{cn: "c", dns: []string{"*.etcd.ns.svc"}, usages: bothUsages}, &ca)
	req := Requirement{What: "peer", Names: Names{DNS: []string{"etcd-0.etcd.ns.svc"}}, Usages: []Usage{UsageServerAuth}, Now: testNow}
	tests := []struct {
		name    string
		data    map[string][]byte
		kinds   []ProblemKind
		message string
	}{{
		name: "complete",
		data: map[string][]byte{"tls.crt": leaf.pem, "tls.key": leaf.keyPEM(t), "ca.crt": ca.pem},
	}, {
		name:    "no ca.crt, empty tls.key",
		data:    map[string][]byte{"tls.crt": leaf.pem, "tls.key": []byte("\n")},
		kinds:   []ProblemKind{ProblemMalformed},
		message: "peer: Secret has no tls.key, ca.crt",
	}, {
		name:  "key of another certificate",
		data:  map[string][]byte{"tls.crt": leaf.pem, "tls.key": other.keyPEM(t), "ca.crt": ca.pem},
		kinds: []ProblemKind{ProblemKeyMismatch},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertProblems(t, ValidateSecretData(tt.data, req), tt.kinds, tt.message)
		})
	}
}

func assertProblems(t *testing.T, err error, kinds []ProblemKind, message string) {
	t.Helper()
	if len(kinds) == 0 {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	v, ok := AsValidationError(err)
	if !ok {
		t.Fatalf("error %v is not a *ValidationError", err)
	}
	var got []ProblemKind
	for _, p := range v.Problems {
		got = append(got, p.Kind)
	}
	if !slices.Equal(got, kinds) {
		t.Errorf("problems %v, want %v (%v)", got, kinds, err)
	}
	for _, k := range kinds {
		if !v.Has(k) {
			t.Errorf("Has(%s) = false", k)
		}
	}
	if message != "" && err.Error() != message {
		t.Errorf("message\n got %s\nwant %s", err, message)
	}
	if strings.Contains(err.Error(), "%!") {
		t.Errorf("badly formatted message: %s", err)
	}
}

func concat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
