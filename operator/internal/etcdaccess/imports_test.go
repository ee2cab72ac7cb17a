package etcdaccess

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/cozystack/etcd-operator"

// Where etcd clients may be built: the client wrapper itself, this package, and the fake.
var mayBuildClients = map[string]bool{
	"operator/internal/etcd":          true,
	"operator/internal/etcdaccess":    true,
	"operator/internal/etcd/etcdtest": true,
}

// What of package etcd builds clients or says where they go; the rest (the Client interface,
// its types, error predicates, FormatID) is free to use.
var clientBuilders = map[string]bool{"Dial": true, "NewPool": true, "Pool": true, "Factory": true, "Target": true}

// Nothing outside etcdaccess dials etcd: production code (the operator's and the tenant
// controller's; test files and e2e helpers, which play clients of their own, aside) neither
// imports clientv3 nor uses package etcd's client builders.
func TestOnlyEtcdAccessDialsEtcd(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	for _, tree := range []string{"operator", "tenants"} {
		err := filepath.WalkDir(filepath.Join(root, tree), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			rel = filepath.ToSlash(rel)
			switch {
			case d.IsDir() && (d.Name() == "e2e" || d.Name() == "testdata"):
				return filepath.SkipDir
			case d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go"):
				return nil
			}
			checkFile(t, path, filepath.ToSlash(filepath.Dir(rel)))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func checkFile(t *testing.T, path, pkg string) {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	if mayBuildClients[pkg] {
		return
	}
	etcdName := ""
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		if strings.HasPrefix(p, "go.etcd.io/etcd/client/v3") {
			t.Errorf("%s imports %s: reach etcd through package etcdaccess", path, p)
		}
		if p == module+"/operator/internal/etcd" {
			etcdName = "etcd"
			if imp.Name != nil {
				etcdName = imp.Name.Name
			}
		}
	}
	if etcdName == "" {
		return
	}
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if x, ok := sel.X.(*ast.Ident); ok && x.Name == etcdName && clientBuilders[sel.Sel.Name] {
			t.Errorf("%s uses etcd.%s: reach etcd through package etcdaccess", path, sel.Sel.Name)
		}
		return true
	})
}
