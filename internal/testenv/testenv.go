// Package testenv starts the project's envtest: a real kube-apiserver and etcd from the tools
// cache (make tools) with the project's generated CRDs installed. Integration-test packages call
// Start once from TestMain.
package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	etcdv1alpha2 "github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

// Env is a running envtest with a client that knows the project's types.
type Env struct {
	Config *rest.Config
	Client client.Client
	Scheme *runtime.Scheme
	env    *envtest.Environment
}

// RepoRoot is the repository root: the nearest folder above the working directory (go test runs
// in the package's folder) that holds go.mod. runtime.Caller cannot be used: -trimpath strips paths.
func RepoRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		panic(err)
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			panic("no go.mod above " + dir)
		}
	}
}

// CRDDir is where `make manifests` writes the project's CRDs.
func CRDDir() string { return filepath.Join(RepoRoot(), "charts", "etcd-operator", "crds") }

// Start boots envtest. It fails with a clear message when KUBEBUILDER_ASSETS is unset, because an
// integration test that silently skipped would prove nothing; run it through `make test-unit`.
func Start(extraCRDDirs ...string) (*Env, error) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		return nil, fmt.Errorf("KUBEBUILDER_ASSETS is not set: run through `make test-unit` (it builds the real kube-apiserver and etcd with `make tools` and points envtest at them)")
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := etcdv1alpha2.AddToScheme(scheme); err != nil {
		return nil, err
	}
	// envtest logs through controller-runtime's logger; without one it prints a stack trace.
	ctrllog.SetLogger(logr.Discard())
	env := &envtest.Environment{
		CRDDirectoryPaths:     append([]string{CRDDir()}, extraCRDDirs...),
		ErrorIfCRDPathMissing: true,
		Scheme:                scheme,
		// Generous: on 2 busy cores the apiserver can take far longer than its usual 3-4 s.
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
		AttachControlPlaneOutput: os.Getenv("TESTENV_VERBOSE") != "",
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting envtest: %w", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		_ = env.Stop()
		return nil, err
	}
	return &Env{Config: cfg, Client: c, Scheme: scheme, env: env}, nil
}

// Stop shuts the apiserver and etcd down.
func (e *Env) Stop() error { return e.env.Stop() }

// SharedDir is ../shared beside the repository: compatibility fixtures that CI has and a fresh
// clone may not. Tests that use it skip, saying why, when it is absent.
func SharedDir() (string, bool) {
	dir := filepath.Join(RepoRoot(), "..", "shared")
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		return dir, true
	}
	return dir, false
}

// FixtureCRDDir is a folder of third-party CRDs generated for envtest by `make manifests`
// (hack/fixture-crds.sh): "kamaji", "victoriametrics", "legacy", "flux" or "monitoring". Pass it to Start.
func FixtureCRDDir(name string) string {
	return filepath.Join(RepoRoot(), "internal", "testenv", "crds", name)
}
