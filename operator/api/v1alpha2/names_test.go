package v1alpha2_test

import (
	"context"
	"strings"
	"testing"

	"github.com/cozystack/etcd-operator/internal/namecheck"
	v1 "github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

func TestShortName(t *testing.T) {
	long := "tenant-" + strings.Repeat("x", 60)
	cases := []struct {
		name, in string
		max      int
		want     string // "" when only the properties below are checked
	}{
		{"fits: unchanged", "etcd-quorum-loss-8e9e05c52164694d", 56, "etcd-quorum-loss-8e9e05c52164694d"},
		{"exactly the limit: unchanged", strings.Repeat("a", 56), 56, strings.Repeat("a", 56)},
		{"one over: cut with a hash", strings.Repeat("a", 57), 56, ""},
		{"cut before a dash: no double dash", strings.Repeat("a", 44) + "-bbbbbbbbbbbb", 56, ""},
		{"long", long, 54, ""},
	}
	for _, tc := range cases {
		got := v1.ShortName(tc.in, tc.max)
		switch {
		case tc.want != "" && got != tc.want:
			t.Errorf("%s: ShortName(%q, %d) = %q, want %q", tc.name, tc.in, tc.max, got, tc.want)
		case len(got) > tc.max:
			t.Errorf("%s: ShortName(%q, %d) = %q has %d characters", tc.name, tc.in, tc.max, got, len(got))
		case strings.Contains(got, "--") || strings.HasSuffix(got, "-"):
			t.Errorf("%s: ShortName(%q, %d) = %q is not a clean DNS label", tc.name, tc.in, tc.max, got)
		case got != v1.ShortName(tc.in, tc.max):
			t.Errorf("%s: ShortName is not deterministic", tc.name)
		}
	}
	// Two long names that share their start (two clusters' quorum-loss restores, two TCPs) differ.
	a, b := v1.ShortName(long+"-a", 54), v1.ShortName(long+"-b", 54)
	if a == b || !strings.HasPrefix(a, long[:40]) {
		t.Errorf("ShortName(…-a) = %q, ShortName(…-b) = %q: want different names that keep the start", a, b)
	}
}

// The names the operator derives with a cluster ID or a random suffix fit their kinds for every
// cluster name the API admits, and keep today's form where it fits.
func TestDerivedRestoreNames(t *testing.T) {
	const id = "8e9e05c52164694d"
	if got := v1.QuorumLossRestoreName("etcd", id); got != "etcd-quorum-loss-"+id {
		t.Errorf("QuorumLossRestoreName(etcd) = %q: a name that fits must not change", got)
	}
	if got := v1.RestoreGenerateName("etcd"); got != "etcd-restore-" {
		t.Errorf("RestoreGenerateName(etcd) = %q: a name that fits must not change", got)
	}
	for l := 1; l <= v1.MaxClusterNameLength; l++ {
		c := "c" + strings.Repeat("x", l-1)
		if got := v1.QuorumLossRestoreName(c, id); len(got) > v1.MaxRestoreNameLength {
			t.Errorf("QuorumLossRestoreName of a %d-character cluster is %q (%d characters)", l, got, len(got))
		}
		if got := namecheck.Generated(v1.RestoreGenerateName(c)); len(got) > v1.MaxRestoreNameLength {
			t.Errorf("a restore generated for a %d-character cluster is %q (%d characters)", l, got, len(got))
		}
	}
	if v1.QuorumLossRestoreName("c"+strings.Repeat("x", 40), id) == v1.QuorumLossRestoreName("c"+strings.Repeat("x", 40), "0000000000000001") {
		t.Error("two etcd cluster IDs of one long-named cluster give the same quorum-loss restore")
	}
}

// The Go constants the naming functions shorten to are the caps the CRDs enforce.
func TestNameCapsMatchCRDs(t *testing.T) {
	caps := namecheck.CRDNameCaps()
	for kind, want := range map[string]int{
		"EtcdCluster": v1.MaxClusterNameLength, "EtcdRestore": v1.MaxRestoreNameLength, "EtcdBackupSchedule": v1.MaxBackupScheduleNameLength,
	} {
		if caps[kind] != want {
			t.Errorf("the %s CRD caps names at %d, the Go constant says %d", kind, caps[kind], want)
		}
	}
}

// An EtcdCluster name that would overflow its client Service, or that no Service or hostname can
// carry (a dot), is refused where it is written.
func TestClusterNameLength(t *testing.T) {
	ns := newNamespace(t)
	if err := env.Client.Create(context.Background(), cluster(ns, "c"+strings.Repeat("x", v1.MaxClusterNameLength-1), nil)); err != nil {
		t.Fatalf("a %d-character cluster name was refused: %v", v1.MaxClusterNameLength, err)
	}
	expectRejected(t, env.Client.Create(context.Background(), cluster(ns, "c"+strings.Repeat("x", v1.MaxClusterNameLength), nil)), v1.MsgClusterNameLength)
	expectRejected(t, env.Client.Create(context.Background(), cluster(ns, "tenant.etcd", nil)), v1.MsgClusterNameDots)
}
