package dryrun

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/internal/testenv"
)

// Unvalidated are kinds whose CRDs cannot be had here, with the reason; objects of these kinds
// are reported as skipped, never as valid.
var Unvalidated = map[schema.GroupKind]string{
	// VMServiceScrape is validated against our own types (internal/fixtureapi/victoriametrics); the
	// charts render no VMPodScrape, so it has none.
	{Group: "operator.victoriametrics.com", Kind: "VMPodScrape"}: "VictoriaMetrics operator's Go module is not served by the module proxy (403), and no chart renders this kind, so it has no fixture",
	{Group: "cozystack.io", Kind: "WorkloadMonitor"}:             "Cozystack publishes no Go module or CRD YAML for WorkloadMonitor that could be used here",
	{Group: "cozystack.io", Kind: "ApplicationDefinition"}:       "validated only when Cozystack's CRD is available (../shared/crds/cozystack)",
}

// fieldOwner is the field manager of the dry-run applies.
const fieldOwner = "etcd-operator-dryrun"

// Env is envtest with our CRDs and every CRD of ThirdPartyCRDPaths installed.
type Env struct {
	*testenv.Env
}

// Start boots envtest with ThirdPartyCRDPaths plus extra CRD paths (e.g. compatibility fixtures).
func Start(extra ...string) (*Env, error) {
	paths, err := ThirdPartyCRDPaths()
	if err != nil {
		return nil, err
	}
	env, err := testenv.Start(append(paths, extra...)...)
	if err != nil {
		return nil, err
	}
	return &Env{Env: env}, nil
}

// Result is the outcome for one object.
type Result struct {
	Kind, Namespace, Name string
	// Err is the apiserver's rejection; nil when the object was accepted.
	Err error
	// Skipped says why the object was not validated (its kind is in Unvalidated).
	Skipped string
}

func (r Result) String() string {
	id := r.Kind + " " + r.Name
	if r.Namespace != "" {
		id = r.Kind + " " + r.Namespace + "/" + r.Name
	}
	switch {
	case r.Err != nil:
		return id + ": rejected: " + r.Err.Error()
	case r.Skipped != "":
		return id + ": not validated: " + r.Skipped
	}
	return id + ": accepted"
}

// Apply dry-runs every object with server-side apply. Namespaced objects without a namespace get
// defaultNamespace (as `helm install -n` does); the namespaces they land in are created for real,
// because a dry-run cannot create an object in a namespace that does not exist. The objects are
// not modified.
func (e *Env) Apply(ctx context.Context, defaultNamespace string, objs []*unstructured.Unstructured) []Result {
	out := make([]Result, 0, len(objs))
	for _, o := range objs {
		out = append(out, e.applyOne(ctx, defaultNamespace, o.DeepCopy()))
	}
	return out
}

func (e *Env) applyOne(ctx context.Context, defaultNamespace string, u *unstructured.Unstructured) Result {
	gvk := u.GroupVersionKind()
	r := Result{Kind: gvk.Kind, Namespace: u.GetNamespace(), Name: u.GetName()}
	if why, ok := Unvalidated[gvk.GroupKind()]; ok && !e.knows(gvk) {
		r.Skipped = why
		return r
	}
	namespaced, err := e.Client.IsObjectNamespaced(u)
	if err != nil {
		if meta.IsNoMatchError(err) {
			err = fmt.Errorf("no CRD for %s is installed: add it to dryrun.ThirdPartyCRDPaths or to Unvalidated with the reason", gvk)
		}
		r.Err = err
		return r
	}
	switch {
	case namespaced && u.GetNamespace() == "":
		u.SetNamespace(defaultNamespace)
		r.Namespace = defaultNamespace
	case !namespaced && u.GetNamespace() != "":
		r.Err = fmt.Errorf("%s is cluster-scoped but has namespace %q", gvk.Kind, u.GetNamespace())
		return r
	}
	if namespaced {
		if err := e.ensureNamespace(ctx, u.GetNamespace()); err != nil {
			r.Err = err
			return r
		}
	}
	r.Err = e.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(fieldOwner), client.ForceOwnership, client.DryRunAll)
	return r
}

func (e *Env) knows(gvk schema.GroupVersionKind) bool {
	_, err := e.Client.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	return err == nil
}

func (e *Env) ensureNamespace(ctx context.Context, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := e.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return nil
}

// Failures returns the rejections, one line each, sorted.
func Failures(results []Result) []string {
	var out []string
	for _, r := range results {
		if r.Err != nil {
			out = append(out, r.String())
		}
	}
	sort.Strings(out)
	return out
}

// Summary counts accepted, rejected and skipped objects, and lists the skipped kinds with why.
func Summary(results []Result) string {
	var ok, bad int
	skipped := map[string]string{}
	for _, r := range results {
		switch {
		case r.Err != nil:
			bad++
		case r.Skipped != "":
			skipped[r.Kind] = r.Skipped
		default:
			ok++
		}
	}
	s := fmt.Sprintf("%d accepted, %d rejected, %d skipped", ok, bad, len(results)-ok-bad)
	kinds := make([]string, 0, len(skipped))
	for k := range skipped {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		s += fmt.Sprintf("\n  %s not validated: %s", k, skipped[k])
	}
	return strings.TrimSpace(s)
}
