// Package fluxexamples loads the Flux examples in docs/examples/flux strictly into Flux's own Go
// types (helm-controller's HelmRelease v2, source-controller's OCIRepository and HelmRepository v1)
// and checks that they install as promised: every chartRef and dependsOn names an object of the
// set in the referrer's own namespace (helm-controller with --no-cross-namespace-refs=true refuses
// any other), charts come from OCIRepositories, never from a HelmRepository of type oci. A misspelt
// or misplaced field fails the strict decode, so an example cannot drift from what Flux accepts.
package fluxexamples

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	serjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// Dir is the examples folder relative to the repository root.
const Dir = "docs/examples/flux"

// Scheme knows the Flux kinds the examples may use and nothing else.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{helmv2.AddToScheme, sourcev1.AddToScheme} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Object is one decoded document and where it came from.
type Object struct {
	File string
	client.Object
}

// LoadDir decodes every *.yaml file of dir, in name order.
func LoadDir(dir string) ([]Object, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no *.yaml in %s", dir)
	}
	sort.Strings(files)
	s, err := Scheme()
	if err != nil {
		return nil, err
	}
	var out []Object
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		objs, err := DecodeStrict(raw, s)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Base(f), err)
		}
		for _, o := range objs {
			out = append(out, Object{File: filepath.Base(f), Object: o})
		}
	}
	return out, nil
}

// DecodeStrict decodes a multi-document YAML stream into the typed objects of scheme. Unknown or
// duplicate fields, unknown kinds and documents without apiVersion/kind are errors.
func DecodeStrict(data []byte, s *runtime.Scheme) ([]client.Object, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []client.Object
	for i := 1; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		obj, err := decodeOne(doc, s)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		out = append(out, obj)
	}
}

func decodeOne(doc []byte, s *runtime.Scheme) (client.Object, error) {
	var tm struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return nil, err
	}
	if tm.APIVersion == "" || tm.Kind == "" {
		return nil, errors.New("apiVersion and kind are required")
	}
	gv, err := schema.ParseGroupVersion(tm.APIVersion)
	if err != nil {
		return nil, err
	}
	if !s.Recognizes(gv.WithKind(tm.Kind)) {
		return nil, fmt.Errorf("%s %s is not a kind these examples may use", tm.APIVersion, tm.Kind)
	}
	// apimachinery's strict serializer names the full path of an unknown field and rejects
	// duplicate keys, which plain strict JSON decoding reports without a path.
	strict := serjson.NewSerializerWithOptions(serjson.DefaultMetaFactory, s, s,
		serjson.SerializerOptions{Yaml: true, Strict: true})
	ro, _, err := strict.Decode(doc, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tm.Kind, err)
	}
	obj, ok := ro.(client.Object)
	if !ok {
		return nil, fmt.Errorf("%s is not an object with metadata", tm.Kind)
	}
	return obj, nil
}

func stripComments(doc []byte) []byte {
	var b bytes.Buffer
	for _, line := range strings.Split(string(doc), "\n") {
		if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "#") {
			b.WriteString(line + "\n")
		}
	}
	return b.Bytes()
}
