package agent

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/cozystack/etcd-operator/operator/internal/snapshot"
)

func TestCheckTarget(t *testing.T) {
	for _, tc := range []struct {
		storage, target string
		want            snapshot.Reason // "" = allowed
	}{
		{"", "3.5.35", ""}, // a 3.5 snapshot has no storage version
		{"", "3.7.3", ""},
		{"3.6.0", "3.6.16", ""},
		{"3.6.0", "v3.7.3", ""},
		{"3.7.0", "3.7.3", ""},
		{"3.7.0", "3.6.16", snapshot.ReasonSnapshotNewerThanTarget},
		{"3.7.0", "3.5.35", snapshot.ReasonSnapshotNewerThanTarget},
		{"3.6.0", "3.5.0-rc.1", snapshot.ReasonSnapshotNewerThanTarget},
		{"4.0.0", "3.7.3", snapshot.ReasonSnapshotNewerThanTarget},
		{"3.10.0", "3.9.0", snapshot.ReasonSnapshotNewerThanTarget},
		{"3.9.0", "3.10.0", ""},
		{"garbage", "3.6.16", snapshot.ReasonFailed},
	} {
		err := checkTarget(tc.storage, tc.target)
		if (err == nil) != (tc.want == "") || (err != nil && snapshot.ReasonOf(err) != tc.want) {
			t.Errorf("checkTarget(%q, %q) = %v, want %q", tc.storage, tc.target, err, tc.want)
		}
	}
}

func TestParseMinor(t *testing.T) {
	for in, want := range map[string]minor{"3.6.16": {3, 6}, "v3.7.3": {3, 7}, "3.5": {3, 5}, "3.6.0-rc.1": {3, 6}} {
		if got, err := parseMinor(in); err != nil || got != want {
			t.Errorf("parseMinor(%q) = %v, %v", in, got, err)
		}
	}
	for _, in := range []string{"", "3", "x.y", "3.-1", "v"} {
		if _, err := parseMinor(in); err == nil {
			t.Errorf("parseMinor(%q) accepted", in)
		}
	}
}

func TestRestoreArgs(t *testing.T) {
	c := RestoreConfig{Name: "c-0", InitialCluster: "c-0=https://p:2380", InitialClusterToken: "tok", InitialAdvertisePeerURLs: "https://p:2380"}
	base := []string{"snapshot", "restore", "/d/restore.db", "--data-dir", "/d/.restore", "--name", "c-0",
		"--initial-cluster", "c-0=https://p:2380", "--initial-cluster-token", "tok", "--initial-advertise-peer-urls", "https://p:2380"}
	if got := restoreArgs(c, "/d/restore.db", "/d/.restore"); !reflect.DeepEqual(got, base) {
		t.Errorf("args %q", got)
	}
	c.BumpRevision, c.MarkCompacted = 1000, true
	want := append(append([]string{}, base...), "--bump-revision", "1000", "--mark-compacted")
	if got := restoreArgs(c, "/d/restore.db", "/d/.restore"); !reflect.DeepEqual(got, want) {
		t.Errorf("args %q", got)
	}
}

// Each etcdutl of the tools cache lists the flags the agent passes for a bump; a fake that
// lacks them is Unsupported. The real ones also must not see the agent's environment.
func TestEtcdutlFlags(t *testing.T) {
	ctx := context.Background()
	for _, v := range []string{"v3.5.35", "v3.6.16", "v3.7.3"} {
		u := etcdutl{path: tool(t, "etcd-"+v, "etcdutl")}
		if err := u.check(); err != nil {
			t.Fatal(err)
		}
		if err := u.supports(ctx, "--bump-revision", "--mark-compacted"); err != nil {
			t.Errorf("etcdutl %s: %v", v, err)
		}
	}
	dir := t.TempDir()
	fake := filepath.Join(dir, "etcdutl")
	script := "#!/bin/sh\nenv > " + filepath.Join(dir, "env") + "\necho '      --data-dir string   Path'\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_SECRET_ACCESS_KEY", "must-not-pass")
	err := etcdutl{path: fake}.supports(ctx, "--bump-revision")
	if snapshot.ReasonOf(err) != snapshot.ReasonUnsupported {
		t.Errorf("a fake etcdutl without the flag: %v", err)
	}
	if seen, _ := os.ReadFile(filepath.Join(dir, "env")); bytes.Contains(seen, []byte("must-not-pass")) {
		t.Errorf("etcdutl saw the agent's environment:\n%s", seen)
	}
	if err := os.WriteFile(filepath.Join(dir, "plain"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, filepath.Join(dir, "plain"), filepath.Join(dir, "none")} {
		if err := (etcdutl{path: p}).check(); snapshot.ReasonOf(err) != snapshot.ReasonUnsupported {
			t.Errorf("check(%s): %v", p, err)
		}
	}
}
