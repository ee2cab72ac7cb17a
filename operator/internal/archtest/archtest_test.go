package archtest

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/cozystack/etcd-operator/"

// testOnly are packages only tests import (fakes) or that hold only tests (this one): the
// diagram leaves them out.
var testOnly = map[string]bool{"etcd/etcdtest": true, "pki/pkitest": true, "archtest": true}

// groups are diagram names that stand for every package under a folder; inside tenants/ the
// packages import each other, controllers and plugin verbs never do.
var groups = map[string]string{"controller/<kind>": "controller/", "kubectletcd/<verb>": "kubectletcd/", "tenants/…": "tenants/"}

func TestImportDiagramIsTrue(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	raw, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	ranks := diagramRanks(t, string(raw))
	for pkg, imports := range packageImports(t, root) {
		if testOnly[pkg] {
			continue
		}
		rank, ok := rankOf(ranks, pkg)
		if !ok {
			t.Errorf("package %s is not in the import diagram of docs/architecture.md", pkg)
			continue
		}
		for _, imp := range imports {
			r, ok := rankOf(ranks, imp)
			switch {
			case !ok:
				t.Errorf("%s imports %s, which the import diagram of docs/architecture.md does not place", pkg, imp)
			case r >= rank && !(strings.HasPrefix(pkg, "tenants/") && strings.HasPrefix(imp, "tenants/")):
				t.Errorf("%s imports %s, which the import diagram of docs/architecture.md places on its own line or below", pkg, imp)
			}
		}
	}
}

// diagramRanks reads the code block under "What may import what": each entry (a line, or lines
// joined while one ends in a comma) ranks the packages right of its arrow, or, on a line that
// imports "nothing of ours", the packages it lists.
func diagramRanks(t *testing.T, doc string) map[string]int {
	t.Helper()
	_, section, ok := strings.Cut(doc, "## What may import what")
	if !ok {
		t.Fatal("docs/architecture.md has no section \"What may import what\"")
	}
	_, block, _ := strings.Cut(section, "```\n")
	block, _, _ = strings.Cut(block, "```")
	ranks := map[string]int{}
	entry, rank := "", 0
	for _, line := range strings.Split(block, "\n") {
		entry += " " + strings.TrimSpace(line)
		if strings.HasSuffix(entry, ",") {
			continue
		}
		names := ""
		if _, right, ok := strings.Cut(entry, "←"); ok {
			names = right
		} else if left, ok := strings.CutSuffix(strings.TrimSpace(entry), "(nothing of ours)"); ok {
			names = left
		}
		for _, n := range strings.Split(names, ",") {
			if n = strings.TrimSpace(n); n != "" {
				if _, seen := ranks[n]; !seen {
					ranks[n] = rank
				}
			}
		}
		entry, rank = "", rank+1
	}
	if len(ranks) < 10 {
		t.Fatalf("the import diagram names only %d packages: %v", len(ranks), ranks)
	}
	return ranks
}

// rankOf finds a package in the diagram by its name, else by the group it belongs to.
func rankOf(ranks map[string]int, pkg string) (int, bool) {
	if r, ok := ranks[pkg]; ok {
		return r, true
	}
	for name, prefix := range groups {
		if r, ok := ranks[name]; ok && strings.HasPrefix(pkg, prefix) {
			return r, true
		}
	}
	return 0, false
}

// packageImports maps every package of operator/ and tenants/ (production files; e2e suites and
// testdata aside) to the packages of this module it imports, both in the diagram's names:
// operator/internal/<p> is <p>, operator/<rest> is <rest>, tenants/<rest> stays.
func packageImports(t *testing.T, root string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, tree := range []string{"operator", "tenants"} {
		err := filepath.WalkDir(filepath.Join(root, tree), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && (d.Name() == "e2e" || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			rel, _ := filepath.Rel(root, filepath.Dir(path))
			pkg := diagramName(filepath.ToSlash(rel))
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			if _, ok := out[pkg]; !ok {
				out[pkg] = nil
			}
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				if rest, ok := strings.CutPrefix(p, module); ok && !slices.Contains(out[pkg], diagramName(rest)) {
					out[pkg] = append(out[pkg], diagramName(rest))
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func diagramName(rel string) string {
	if p, ok := strings.CutPrefix(rel, "operator/internal/"); ok {
		return p
	}
	if p, ok := strings.CutPrefix(rel, "operator/"); ok {
		return p
	}
	return rel
}
