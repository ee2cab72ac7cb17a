// Package chartrender renders a Helm chart from its folder with the Helm SDK, client-only (no
// cluster), the way `helm install --dry-run=client` would: values are merged with the chart's
// defaults and checked against values.schema.json, the chart's kubeVersion constraint is
// checked, and every rendered document is decoded into an unstructured object. The chart render
// tests and the server-side dry-run tests share it, so both see exactly the same objects.
package chartrender

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"sort"
	"strings"

	"helm.sh/helm/v4/pkg/chart/common"
	chartutil "helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/loader"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	chartv2util "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// DefaultKubeVersion is the cluster version the templates see (.Capabilities.KubeVersion); the
// project's Kubernetes pin.
const DefaultKubeVersion = "v1.37.2"

// Options tune a render; the zero value renders like `helm install <chart-name> --namespace ns`.
type Options struct {
	// ReleaseName defaults to the chart's name.
	ReleaseName string
	Namespace   string
	// KubeVersion defaults to DefaultKubeVersion.
	KubeVersion string
	// Strict fails on a template reading a value that does not exist (as `helm lint --strict`).
	Strict bool
	// IncludeCRDs prepends the chart's crds/ objects, as `helm install` applies them first.
	IncludeCRDs bool
	// APIVersions are served by the cluster beside Helm's defaults (.Capabilities.APIVersions), as
	// `helm template --api-versions` takes them: "group/version" or "group/version/Kind".
	APIVersions []string
}

// Manifest is one rendered object with the template it came from.
type Manifest struct {
	Source string
	Object *unstructured.Unstructured
}

// Render renders the chart in chartDir as release <chart name> in namespace.
func Render(chartDir string, values map[string]any, namespace string) ([]*unstructured.Unstructured, error) {
	ms, err := RenderManifests(chartDir, values, Options{Namespace: namespace})
	if err != nil {
		return nil, err
	}
	out := make([]*unstructured.Unstructured, len(ms))
	for i, m := range ms {
		out[i] = m.Object
	}
	return out, nil
}

// RenderManifests renders the chart and returns its objects in a stable order: CRDs first (if
// asked), then templates by path, documents in file order.
func RenderManifests(chartDir string, values map[string]any, o Options) ([]Manifest, error) {
	charter, err := loader.Load(chartDir)
	if err != nil {
		return nil, fmt.Errorf("load chart %s: %w", chartDir, err)
	}
	ch, ok := charter.(*chartv2.Chart)
	if !ok {
		return nil, fmt.Errorf("chart %s: only apiVersion v2 charts are supported, got %T", chartDir, charter)
	}
	caps, err := capabilities(o.KubeVersion, o.APIVersions)
	if err != nil {
		return nil, err
	}
	if kv := ch.Metadata.KubeVersion; kv != "" && !chartv2util.IsCompatibleRange(kv, caps.KubeVersion.String()) {
		return nil, fmt.Errorf("chart %s requires kubeVersion %s, rendering for %s", ch.Name(), kv, caps.KubeVersion.String())
	}
	if o.ReleaseName == "" {
		o.ReleaseName = ch.Name()
	}
	rel := common.ReleaseOptions{Name: o.ReleaseName, Namespace: o.Namespace, Revision: 1, IsInstall: true}
	renderValues, err := chartutil.ToRenderValues(ch, values, rel, caps)
	if err != nil {
		return nil, err
	}
	files, err := engine.Engine{Strict: o.Strict}.RenderWithContext(context.Background(), ch, renderValues)
	if err != nil {
		return nil, err
	}
	var out []Manifest
	if o.IncludeCRDs {
		for _, crd := range ch.CRDObjects() {
			ms, err := decode(crd.Filename, crd.File.Data)
			if err != nil {
				return nil, err
			}
			out = append(out, ms...)
		}
	}
	names := make([]string, 0, len(files))
	for name := range files {
		if base := path.Base(name); !strings.HasPrefix(base, "_") && base != "NOTES.txt" {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		ms, err := decode(name, []byte(files[name]))
		if err != nil {
			return nil, err
		}
		out = append(out, ms...)
	}
	return out, nil
}

func capabilities(kubeVersion string, apiVersions []string) (*common.Capabilities, error) {
	if kubeVersion == "" {
		kubeVersion = DefaultKubeVersion
	}
	kv, err := common.ParseKubeVersion(kubeVersion)
	if err != nil {
		return nil, fmt.Errorf("kube version %q: %w", kubeVersion, err)
	}
	caps := common.DefaultCapabilities.Copy()
	caps.KubeVersion = *kv
	caps.APIVersions = append(slices.Clone(caps.APIVersions), apiVersions...)
	return caps, nil
}

// decode splits a rendered file into its YAML documents; empty documents (a template whose
// condition is off) are dropped, and anything that is not a Kubernetes object is an error.
func decode(source string, data []byte) ([]Manifest, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []Manifest
	for i := 0; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", source, i, err)
		}
		// Through JSON with the apimachinery decoder, so whole numbers are int64 as in objects
		// read from the apiserver (sigs.k8s.io/yaml alone would give float64).
		raw, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", source, i, err)
		}
		var obj map[string]any
		if err := utiljson.Unmarshal(raw, &obj); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", source, i, err)
		}
		if len(obj) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: obj}
		if u.GetAPIVersion() == "" || u.GetKind() == "" {
			return nil, fmt.Errorf("%s: document %d has no apiVersion or kind", source, i)
		}
		out = append(out, Manifest{Source: source, Object: u})
	}
}

// YAML writes manifests as one multi-document stream with a `# Source:` line per object, keys
// sorted: the format of the golden files.
func YAML(ms []Manifest) ([]byte, error) {
	var b bytes.Buffer
	for _, m := range ms {
		raw, err := yaml.Marshal(m.Object.Object)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, "---\n# Source: %s\n", m.Source)
		b.Write(raw)
	}
	return b.Bytes(), nil
}
