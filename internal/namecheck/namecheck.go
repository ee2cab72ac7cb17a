// Package namecheck says whether the name of an object fits where the API server puts it: each
// kind's own rule (a Service is a DNS-1035 label, most objects DNS-1123 subdomains), the length
// caps this project's CRDs add with CEL (read from the generated CRDs, so they are the ones the
// API server enforces), label values, and a member Pod's hostname and subdomain. The name-limit
// tests of the operator, the tenant controller and the charts derive every name from parent
// names up to the longest their API admits and ask this package about each.
package namecheck

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apiserver/pkg/storage/names"
	"sigs.k8s.io/yaml"

	"github.com/cozystack/etcd-operator/internal/testenv"
)

// dns1035Kinds are named by DNS-1035 labels (at most 63 characters, starting with a letter):
// Services until Kubernetes 1.36 (RelaxedServiceNameValidation, on by default since, admits
// DNS-1123 labels); the charts support 1.30 and later, so the stricter rule holds.
var dns1035Kinds = map[string]bool{"Service": true}

// dns1123LabelKinds are named by DNS-1123 labels (at most 63 characters).
var dns1123LabelKinds = map[string]bool{"Namespace": true}

// pathSegmentKinds are named by anything that fits a URL path segment (RBAC's rule).
var pathSegmentKinds = map[string]bool{"Role": true, "ClusterRole": true, "RoleBinding": true, "ClusterRoleBinding": true}

// Name says what is wrong with name as the name of an object of kind; nil when it fits. Kinds of
// this project's API also meet their CRD's CEL rules on metadata.name.
func Name(kind, name string) []string {
	var errs []string
	switch {
	case dns1035Kinds[kind]:
		errs = validation.IsDNS1035Label(name)
	case dns1123LabelKinds[kind]:
		errs = validation.IsDNS1123Label(name)
	case pathSegmentKinds[kind]:
		if name == "" || len(name) > validation.DNS1123SubdomainMaxLength {
			errs = []string{fmt.Sprintf("must be 1 to %d characters", validation.DNS1123SubdomainMaxLength)}
		}
	default:
		errs = validation.IsDNS1123Subdomain(name)
	}
	if max, ok := CRDNameCaps()[kind]; ok && len(name) > max {
		errs = append(errs, fmt.Sprintf("its CRD refuses names over %d characters", max))
	}
	for _, sub := range crdRules().forbidden[kind] {
		if strings.Contains(name, sub) {
			errs = append(errs, fmt.Sprintf("its CRD refuses names containing %q", sub))
		}
	}
	return errs
}

// Generated is a name the API server makes from generateName, by its own generator (the base cut
// to 58 characters, then 5 random ones): as long as any it makes.
func Generated(generateName string) string {
	return names.SimpleNameGenerator.GenerateName(generateName)
}

// Finding is one name that does not fit.
type Finding struct {
	Where string // what derived it, for the message
	Kind  string
	Field string // metadata.name, a label key, spec.hostname...
	Value string
	Errs  []string
}

func (f Finding) String() string {
	return fmt.Sprintf("%s: %s %s %s (%d characters): %v", f.Where, f.Kind, f.Field, Abbrev(f.Value), len(f.Value), f.Errs)
}

// Abbrev quotes a name, its middle elided when it is long: the start and the end of a derived
// name say what it is.
func Abbrev(name string) string {
	if len(name) <= 72 {
		return strconv.Quote(name)
	}
	return strconv.Quote(name[:24]) + "…" + strconv.Quote(name[len(name)-40:])
}

// Object checks an object's name (or the name generateName gives it), its labels' values and,
// for a Pod, its hostname and subdomain. where says what made it.
func Object(where, kind string, obj metav1.Object) []Finding {
	var out []Finding
	add := func(field, value string, errs []string) {
		if len(errs) > 0 {
			out = append(out, Finding{Where: where, Kind: kind, Field: field, Value: value, Errs: errs})
		}
	}
	if obj.GetName() == "" && obj.GetGenerateName() != "" {
		gen := Generated(obj.GetGenerateName())
		add("metadata.name (generated from metadata.generateName)", gen, Name(kind, gen))
	} else {
		add("metadata.name", obj.GetName(), Name(kind, obj.GetName()))
	}
	out = append(out, Labels(where, kind, "label", obj.GetLabels())...)
	if pod, ok := obj.(*corev1.Pod); ok {
		add("spec.hostname", pod.Spec.Hostname, labelIfSet(pod.Spec.Hostname))
		add("spec.subdomain", pod.Spec.Subdomain, labelIfSet(pod.Spec.Subdomain))
	}
	if content := contentOf(obj); content != nil {
		tmpl, _, _ := unstructured.NestedStringMap(content, "spec", "template", "metadata", "labels")
		out = append(out, Labels(where, kind, "pod template label", tmpl)...)
		sel, _, _ := unstructured.NestedStringMap(content, "spec", "selector", "matchLabels")
		out = append(out, Labels(where, kind, "selector label", sel)...)
		if kind == "Certificate" {
			out = append(out, certificate(where, content)...)
		}
	}
	return out
}

// maxCommonName is the longest commonName X.509 admits (RFC 5280's ub-common-name);
// cert-manager refuses a Certificate with a longer one.
const maxCommonName = 64

// certificate checks what a cert-manager Certificate names: the Secret it fills, its commonName.
func certificate(where string, content map[string]any) []Finding {
	var out []Finding
	if secret, ok, _ := unstructured.NestedString(content, "spec", "secretName"); ok {
		if errs := Name("Secret", secret); len(errs) > 0 {
			out = append(out, Finding{Where: where, Kind: "Certificate", Field: "spec.secretName (a Secret)", Value: secret, Errs: errs})
		}
	}
	if cn, _, _ := unstructured.NestedString(content, "spec", "commonName"); len(cn) > maxCommonName {
		out = append(out, Finding{Where: where, Kind: "Certificate", Field: "spec.commonName", Value: cn,
			Errs: []string{fmt.Sprintf("must be no more than %d characters", maxCommonName)}})
	}
	return out
}

// contentOf is an object as a map, to read nested fields of any kind; nil if it cannot be.
func contentOf(obj metav1.Object) map[string]any {
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		return o.Object
	case runtime.Object:
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			return nil
		}
		return m
	}
	return nil
}

// Tally groups findings by what they are about (the object and field a derivation gives) with
// the lengths of the parent name they happen at: one line each, not one per length.
type Tally struct {
	byKey map[string]*tallied
	keys  []string
}

type tallied struct {
	parent  string
	first   Finding
	lengths []int
}

// Add records f, found for a parent (a kind, for the message) whose name had parentLen characters.
func (t *Tally) Add(parent string, parentLen int, f Finding) {
	if t.byKey == nil {
		t.byKey = map[string]*tallied{}
	}
	key := parent + "\x00" + f.Where + "\x00" + f.Kind + "\x00" + f.Field
	if t.byKey[key] == nil {
		t.byKey[key] = &tallied{parent: parent, first: f}
		t.keys = append(t.keys, key)
	}
	t.byKey[key].lengths = append(t.byKey[key].lengths, parentLen)
}

// Lines say, per object and field, for which parent name lengths it does not fit, and the first
// such name.
func (t *Tally) Lines() []string {
	out := make([]string, 0, len(t.keys))
	for _, k := range t.keys {
		e := t.byKey[k]
		f, lo, hi := e.first, e.lengths[0], e.lengths[len(e.lengths)-1]
		out = append(out, fmt.Sprintf("%s: %s %s does not fit for %s names of %d to %d characters; at %d: %s (%d characters): %v",
			f.Where, f.Kind, f.Field, e.parent, lo, hi, lo, Abbrev(f.Value), len(f.Value), f.Errs))
	}
	return out
}

// Labels checks label values.
func Labels(where, kind, field string, labels map[string]string) []Finding {
	var out []Finding
	for k, v := range labels {
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			out = append(out, Finding{Where: where, Kind: kind, Field: field + " " + k, Value: v, Errs: errs})
		}
	}
	return out
}

func labelIfSet(s string) []string {
	if s == "" {
		return nil
	}
	return validation.IsDNS1123Label(s)
}

var (
	rulesOnce sync.Once
	rules     nameRules
	rulesErr  error
)

// nameRules are what the project's CRDs refuse in metadata.name, by kind.
type nameRules struct {
	caps      map[string]int
	forbidden map[string][]string
}

// The CEL rules on metadata.name the CRDs use: a length cap and a forbidden substring.
var (
	nameCap       = regexp.MustCompile(`^size\(self\.metadata\.name\) <= ([0-9]+)$`)
	nameForbidden = regexp.MustCompile(`^!self\.metadata\.name\.contains\('([^']+)'\)$`)
)

// CRDNameCaps are the caps on metadata.name of the project's kinds, by kind, as the generated
// CRDs (what `make manifests` writes and the API server enforces) state them.
func CRDNameCaps() map[string]int { return crdRules().caps }

// crdRules reads the CRDs once. It panics when they cannot be read: every name check would be
// wrong without them.
func crdRules() nameRules {
	rulesOnce.Do(func() { rules, rulesErr = readRules(testenv.CRDDir()) })
	if rulesErr != nil {
		panic(rulesErr)
	}
	return rules
}

type crd struct {
	Spec struct {
		Names    struct{ Kind string } `json:"names"`
		Versions []struct {
			Schema struct {
				OpenAPIV3Schema struct {
					Validations []struct{ Rule string } `json:"x-kubernetes-validations"`
				} `json:"openAPIV3Schema"`
			} `json:"schema"`
		} `json:"versions"`
	} `json:"spec"`
}

func readRules(dir string) (nameRules, error) {
	out := nameRules{caps: map[string]int{}, forbidden: map[string][]string{}}
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		return out, fmt.Errorf("no CRDs in %s (run make manifests): %v", dir, err)
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return out, err
		}
		var c crd
		if err := yaml.Unmarshal(raw, &c); err != nil {
			return out, fmt.Errorf("%s: %w", f, err)
		}
		kind := c.Spec.Names.Kind
		for _, v := range c.Spec.Versions {
			for _, r := range v.Schema.OpenAPIV3Schema.Validations {
				if m := nameCap.FindStringSubmatch(r.Rule); m != nil {
					out.caps[kind], _ = strconv.Atoi(m[1])
				}
				if m := nameForbidden.FindStringSubmatch(r.Rule); m != nil {
					out.forbidden[kind] = append(out.forbidden[kind], m[1])
				}
			}
		}
	}
	return out, nil
}
