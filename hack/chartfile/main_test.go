package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeHelm answers `helm pull NAME --repo URL --version V --untar --untardir DIR` by writing
// DIR/NAME/Chart.yaml with version V (or FAKE_HELM_VERSION), and logs each call.
const fakeHelm = `#!/bin/sh
name=$2; version=$6; dir=$9
echo "$@" >> "$FAKE_HELM_LOG"
[ -n "$FAKE_HELM_FAIL" ] && { echo "no such host" >&2; exit 1; }
mkdir -p "$dir/$name"
printf 'apiVersion: v2\nname: %s\nversion: %s\n' "$name" "${FAKE_HELM_VERSION:-$version}" > "$dir/$name/Chart.yaml"
`

func setup(t *testing.T) (helm, file, log string) {
	t.Helper()
	dir := t.TempDir()
	helm = filepath.Join(dir, "helm")
	if err := os.WriteFile(helm, []byte(fakeHelm), 0o755); err != nil {
		t.Fatal(err)
	}
	file = filepath.Join(dir, "Chartfile.yaml")
	doc := "version: 1\ndirectory: third_party/charts\nrepositories:\n  - {name: r, url: https://charts.example}\n" +
		"requires:\n  - {chart: r/a, version: 1.0.0}\n  - {chart: r/b, version: v2.0.0, directory: bee}\n"
	if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	log = filepath.Join(dir, "helm.log")
	t.Setenv("FAKE_HELM_LOG", log)
	return helm, file, log
}

func TestVendorPullsOnceAndSkipsWhatIsCurrent(t *testing.T) {
	helm, file, log := setup(t)
	for i := 0; i < 2; i++ {
		if err := run(helm, file); err != nil {
			t.Fatal(err)
		}
	}
	base := filepath.Join(filepath.Dir(file), "third_party", "charts")
	if v := vendoredVersion(filepath.Join(base, "a")); v != "1.0.0" {
		t.Errorf("a: version %q", v)
	}
	if v := vendoredVersion(filepath.Join(base, "bee")); v != "v2.0.0" {
		t.Errorf("b in bee/: version %q", v)
	}
	calls, _ := os.ReadFile(log)
	if n := strings.Count(string(calls), "pull "); n != 2 {
		t.Errorf("helm pull ran %d times over two runs, want 2 (the second run has nothing to do):\n%s", n, calls)
	}
	if !strings.Contains(string(calls), "--repo https://charts.example") {
		t.Errorf("pulls must name the repository URL, not a repo added to the user's helm: %s", calls)
	}
}

func TestVendorFailureChangesNothing(t *testing.T) {
	helm, file, _ := setup(t)
	if err := run(helm, file); err != nil {
		t.Fatal(err)
	}
	t.Setenv("FAKE_HELM_FAIL", "1")
	// A bumped pin that cannot be pulled must leave the vendored chart as it was.
	raw, _ := os.ReadFile(file)
	if err := os.WriteFile(file, []byte(strings.Replace(string(raw), "1.0.0", "1.1.0", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	err := run(helm, file)
	if err == nil || !strings.Contains(err.Error(), "needs network access") {
		t.Fatalf("got %v, want the network explanation", err)
	}
	if v := vendoredVersion(filepath.Join(filepath.Dir(file), "third_party", "charts", "a")); v != "1.0.0" {
		t.Errorf("a is now %q; a failed pull must change nothing", v)
	}
}

func TestVendorRejectsAWrongVersionAndAMissingHelm(t *testing.T) {
	helm, file, _ := setup(t)
	t.Setenv("FAKE_HELM_VERSION", "9.9.9")
	if err := run(helm, file); err == nil || !strings.Contains(err.Error(), `want "1.0.0"`) {
		t.Errorf("got %v, want a version mismatch", err)
	}
	if err := run(filepath.Join(t.TempDir(), "helm"), file); err == nil || !strings.Contains(err.Error(), "make tools") {
		t.Errorf("got %v, want the make tools hint", err)
	}
}
