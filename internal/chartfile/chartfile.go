// Package chartfile reads and checks Chartfile.yaml, the pins of the third-party charts the e2e
// and a real install need, written in Grafana Tanka's chartfile schema (version 1) so that
// `tk tool charts vendor` could read it too (Tanka looks for the lowercase name, so a copy or a
// symlink named chartfile.yaml is needed for that). `make vendor-charts` (hack/chartfile) uses it.
package chartfile

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"
)

// FileName is the file at the repository root.
const FileName = "Chartfile.yaml"

// Chartfile is Tanka's schema, version 1. Unknown keys are errors, as in Tanka (UnmarshalStrict).
type Chartfile struct {
	Version      int           `json:"version"`
	Repositories []Repository  `json:"repositories"`
	Requires     []Requirement `json:"requires"`
	// Directory is where charts are vendored, relative to the file. Tanka defaults it to
	// "charts", which is where this project's own charts live; Validate demands another.
	Directory string `json:"directory"`
}

// Repository is a classic (index.yaml) Helm chart repository.
type Repository struct {
	Name     string `json:"name"`
	URL      string `json:"url"`
	CAFile   string `json:"caFile,omitempty"`
	CertFile string `json:"certFile,omitempty"`
	KeyFile  string `json:"keyFile,omitempty"`
	Username string `json:"username,omitempty"`
	Password string `json:"password,omitempty"`
}

// Requirement pins one chart: "<repository>/<chart>" at one exact version.
type Requirement struct {
	Chart   string `json:"chart"`
	Version string `json:"version"`
	// Directory is the sub-folder of Chartfile.Directory; the chart name when empty.
	Directory string `json:"directory,omitempty"`
}

// Repo and Name split Chart at its slash.
func (r Requirement) Repo() string { repo, _, _ := strings.Cut(r.Chart, "/"); return repo }

// Name is the chart's name inside its repository.
func (r Requirement) Name() string { _, name, _ := strings.Cut(r.Chart, "/"); return name }

// Dir is the sub-folder the chart is vendored into.
func (r Requirement) Dir() string {
	if r.Directory != "" {
		return r.Directory
	}
	return r.Name()
}

// Load reads and strictly decodes a Chartfile; it does not validate it.
func Load(file string) (*Chartfile, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	cf := &Chartfile{}
	if err := yaml.UnmarshalStrict(raw, cf); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Base(file), err)
	}
	return cf, nil
}

var (
	nameRE = regexp.MustCompile(`^[\w-]+$`)
	// One exact version: what `helm pull --version` resolves to itself, never a range. A leading
	// "v" is allowed because some charts (cert-manager's) are versioned that way.
	exactVersionRE = regexp.MustCompile(`^v?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)
)

// Validate returns every problem of cf, not just the first.
func (cf *Chartfile) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if cf.Version != 1 {
		bad("version is %d, want 1", cf.Version)
	}
	if dir := path.Clean(cf.Directory); cf.Directory == "" || dir == "charts" || strings.HasPrefix(dir, "charts/") {
		bad("directory %q: set it, and not to charts/ (the project's own charts; `vendor --prune` would delete them)", cf.Directory)
	} else if dir == "vendor" || strings.HasPrefix(dir, "vendor/") {
		bad("directory %q: a top-level vendor/ folder switches the go command to vendored modules", cf.Directory)
	} else if path.IsAbs(dir) || strings.HasPrefix(dir, "../") {
		bad("directory %q must stay inside the repository", cf.Directory)
	}
	repos := map[string]bool{}
	for _, r := range cf.Repositories {
		if !nameRE.MatchString(r.Name) {
			bad("repository name %q does not match %s", r.Name, nameRE)
		}
		if repos[r.Name] {
			bad("repository %q is listed twice", r.Name)
		}
		repos[r.Name] = true
		if !strings.HasPrefix(r.URL, "https://") {
			bad("repository %s: url %q is not https://", r.Name, r.URL)
		}
	}
	dirs := map[string]string{}
	for _, req := range cf.Requires {
		if repo, name, ok := strings.Cut(req.Chart, "/"); !ok || !nameRE.MatchString(repo) || !nameRE.MatchString(name) {
			bad("chart %q is not <repository>/<chart>", req.Chart)
		} else if !repos[repo] {
			bad("chart %s: repository %q is not listed", req.Chart, repo)
		}
		if !exactVersionRE.MatchString(req.Version) {
			bad("chart %s: version %q is not one exact version", req.Chart, req.Version)
		}
		if d := req.Dir(); !nameRE.MatchString(d) {
			bad("chart %s: directory %q must be a single folder name matching %s", req.Chart, d, nameRE)
		} else if other, dup := dirs[d]; dup {
			bad("charts %s and %s both write to %s/%s", other, req.Chart, cf.Directory, d)
		} else {
			dirs[d] = req.Chart
		}
	}
	return errors.Join(errs...)
}
