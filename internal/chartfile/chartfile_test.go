package chartfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cozystack/etcd-operator/internal/testenv"
)

func TestRepositoryChartfileIsValid(t *testing.T) {
	cf, err := Load(filepath.Join(testenv.RepoRoot(), FileName))
	if err != nil {
		t.Fatal(err)
	}
	if err := cf.Validate(); err != nil {
		t.Fatal(err)
	}
	// The e2e and a real install need these; dropping one must be a deliberate test change.
	want := []string{"jetstack/cert-manager", "clastix/kamaji", "autoscaler/vertical-pod-autoscaler", "fluxcd-community/flux2"}
	have := map[string]bool{}
	for _, r := range cf.Requires {
		have[r.Chart] = true
	}
	for _, c := range want {
		if !have[c] {
			t.Errorf("%s is not pinned", c)
		}
	}
}

const valid = `version: 1
directory: third_party/charts
repositories:
  - name: jetstack
    url: https://charts.jetstack.io
requires:
  - chart: jetstack/cert-manager
    version: v1.21.2
`

func load(t *testing.T, doc string) (*Chartfile, error) {
	t.Helper()
	f := filepath.Join(t.TempDir(), FileName)
	if err := os.WriteFile(f, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return Load(f)
}

func TestValidBaseline(t *testing.T) {
	cf, err := load(t, valid)
	if err != nil {
		t.Fatal(err)
	}
	if err := cf.Validate(); err != nil {
		t.Fatalf("the baseline must be valid: %v", err)
	}
	if got := cf.Requires[0].Dir(); got != "cert-manager" {
		t.Errorf("default directory is %q, want the chart name", got)
	}
}

func TestUnknownKeysAreRejected(t *testing.T) {
	for name, doc := range map[string]string{
		"top level":   valid + "charts: []\n",
		"requirement": strings.Replace(valid, "    version: v1.21.2", "    version: v1.21.2\n    dir: x", 1),
		"repository":  strings.Replace(valid, "    url:", "    uri: x\n    url:", 1),
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := load(t, doc); err == nil || !strings.Contains(err.Error(), "unknown field") {
				t.Fatalf("got %v, want an unknown field error", err)
			}
		})
	}
}

func TestValidateRejects(t *testing.T) {
	req := func(chart, version, dir string) string {
		return "  - chart: " + chart + "\n    version: " + version + "\n    directory: " + dir + "\n"
	}
	cases := map[string]struct{ doc, want string }{
		"wrong version":    {strings.Replace(valid, "version: 1\n", "version: 2\n", 1), "want 1"},
		"charts dir":       {strings.Replace(valid, "third_party/charts", "charts", 1), "not to charts/"},
		"charts subdir":    {strings.Replace(valid, "third_party/charts", "charts/vendor", 1), "not to charts/"},
		"no dir":           {strings.Replace(valid, "directory: third_party/charts\n", "", 1), "set it"},
		"vendor dir":       {strings.Replace(valid, "third_party/charts", "vendor/charts", 1), "vendored modules"},
		"outside":          {strings.Replace(valid, "third_party/charts", "../charts", 1), "inside the repository"},
		"repo name":        {strings.Replace(valid, "name: jetstack", "name: jet.stack", 1), `does not match`},
		"http repo":        {strings.Replace(valid, "https://charts", "http://charts", 1), "not https://"},
		"range":            {strings.Replace(valid, "v1.21.2", `">=1.21.0"`, 1), "not one exact version"},
		"partial":          {strings.Replace(valid, "v1.21.2", "1.21", 1), "not one exact version"},
		"wildcard":         {strings.Replace(valid, "v1.21.2", "1.21.x", 1), "not one exact version"},
		"no slash":         {strings.Replace(valid, "jetstack/cert-manager", "cert-manager", 1), "not <repository>/<chart>"},
		"unlisted repo":    {strings.Replace(valid, "jetstack/cert-manager", "other/cert-manager", 1), `repository "other" is not listed`},
		"same dir":         {valid + req("jetstack/cert-manager-csi", "v0.1.0", "cert-manager"), "both write to third_party/charts/cert-manager"},
		"same default dir": {valid + req("jetstack/cert-manager", "v1.20.0", `""`), "both write to"},
		"nested dir":       {valid + req("jetstack/x", "1.0.0", "a/b"), "single folder name"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cf, err := load(t, tc.doc)
			if err != nil {
				t.Fatal(err)
			}
			err = cf.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
