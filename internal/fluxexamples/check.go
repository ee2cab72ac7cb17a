package fluxexamples

import (
	"fmt"
	"path"
	"strings"

	"github.com/Masterminds/semver/v3"
	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
)

// HelmChartLayer is the media type of a Helm chart's layer in an OCI artifact (what `helm push`
// writes); an OCIRepository selects it with operation copy so helm-controller gets the chart as is.
const HelmChartLayer = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"

// Check reports what would not install as the examples promise:
//   - a HelmRelease installs from an OCIRepository of the set through spec.chartRef (not spec.chart,
//     which goes through a HelmRepository), pinned to one exact chart version;
//   - nothing refers to another namespace: helm-controller run with --no-cross-namespace-refs=true,
//     as multi-tenant clusters run it, refuses such references;
//   - no HelmRepository of type oci: upstream keeps it in maintenance, OCIRepository replaces it.
func Check(objs []Object) []error {
	sources := map[string]*sourcev1.OCIRepository{}
	releases := map[string]bool{}
	var errs []error
	for _, o := range objs {
		switch obj := o.Object.(type) {
		case *sourcev1.OCIRepository:
			sources[key(obj.Namespace, obj.Name)] = obj
			errs = append(errs, located(o, checkOCIRepository(obj))...)
		case *sourcev1.HelmRepository:
			if obj.Spec.Type == sourcev1.HelmRepositoryTypeOCI {
				errs = append(errs, located(o, []error{fmt.Errorf("type oci: HelmRepository of type oci is in maintenance upstream; use an OCIRepository and the HelmRelease's spec.chartRef")})...)
			}
		case *helmv2.HelmRelease:
			releases[key(obj.Namespace, obj.Name)] = true
		}
	}
	for _, o := range objs {
		if hr, ok := o.Object.(*helmv2.HelmRelease); ok {
			errs = append(errs, located(o, checkRelease(hr, sources, releases))...)
		}
	}
	return errs
}

func checkOCIRepository(r *sourcev1.OCIRepository) []error {
	var errs []error
	if !strings.HasPrefix(r.Spec.URL, "oci://") {
		errs = append(errs, fmt.Errorf("url %q is not an oci:// URL", r.Spec.URL))
	}
	if r.Spec.Reference == nil {
		errs = append(errs, fmt.Errorf("ref.tag is required: the examples pin one exact chart version"))
	} else if _, err := semver.StrictNewVersion(r.Spec.Reference.Tag); err != nil {
		errs = append(errs, fmt.Errorf("ref.tag %q is not one exact chart version: %v", r.Spec.Reference.Tag, err))
	}
	if l := r.Spec.LayerSelector; l == nil || l.MediaType != HelmChartLayer || l.Operation != sourcev1.OCILayerCopy {
		errs = append(errs, fmt.Errorf("layerSelector must select the Helm chart layer (%s) with operation %s", HelmChartLayer, sourcev1.OCILayerCopy))
	}
	return errs
}

func checkRelease(hr *helmv2.HelmRelease, sources map[string]*sourcev1.OCIRepository, releases map[string]bool) []error {
	var errs []error
	if hr.Spec.Chart != nil {
		errs = append(errs, fmt.Errorf("spec.chart makes a HelmChart from a HelmRepository: install from an OCIRepository through spec.chartRef"))
		errs = append(errs, sameNamespace("spec.chart.spec.sourceRef", hr.Spec.Chart.Spec.SourceRef.Namespace, hr.Namespace)...)
	}
	if ref := hr.Spec.ChartRef; ref == nil {
		errs = append(errs, fmt.Errorf("spec.chartRef is required: the examples install from an OCIRepository"))
	} else {
		if ref.Kind != sourcev1.OCIRepositoryKind {
			errs = append(errs, fmt.Errorf("chartRef.kind is %q, want %s", ref.Kind, sourcev1.OCIRepositoryKind))
		}
		errs = append(errs, sameNamespace("chartRef", ref.Namespace, hr.Namespace)...)
		if sources[key(hr.Namespace, ref.Name)] == nil {
			errs = append(errs, fmt.Errorf("chartRef %s/%s is not an OCIRepository of the examples", hr.Namespace, ref.Name))
		}
	}
	for _, d := range hr.Spec.DependsOn {
		errs = append(errs, sameNamespace("dependsOn "+d.Name, d.Namespace, hr.Namespace)...)
		if !releases[key(hr.Namespace, d.Name)] {
			errs = append(errs, fmt.Errorf("dependsOn %s/%s is not among the examples", hr.Namespace, d.Name))
		}
	}
	if hr.Spec.Interval.Duration <= 0 {
		errs = append(errs, fmt.Errorf("spec.interval must be positive"))
	}
	return errs
}

// sameNamespace refuses a reference to another namespace than the referrer's own.
func sameNamespace(what, ns, own string) []error {
	if ns == "" || ns == own {
		return nil
	}
	return []error{fmt.Errorf("%s refers to namespace %s, not the release's own (%s): helm-controller with --no-cross-namespace-refs=true refuses it", what, ns, own)}
}

// ChartOf is the chart a HelmRelease of the set installs and its version: the last path element
// of the URL of the OCIRepository its chartRef names, and that repository's tag ("" and "" when
// it names none of the set).
func ChartOf(objs []Object, hr *helmv2.HelmRelease) (name, version string) {
	if hr.Spec.ChartRef == nil {
		return "", ""
	}
	for _, o := range objs {
		r, ok := o.Object.(*sourcev1.OCIRepository)
		if ok && r.Namespace == hr.Namespace && r.Name == hr.Spec.ChartRef.Name && r.Spec.Reference != nil {
			return path.Base(r.Spec.URL), r.Spec.Reference.Tag
		}
	}
	return "", ""
}

func located(o Object, errs []error) []error {
	out := make([]error, 0, len(errs))
	for _, err := range errs {
		out = append(out, fmt.Errorf("%s: %s %s/%s: %w", o.File, o.GetObjectKind().GroupVersionKind().Kind, o.GetNamespace(), o.GetName(), err))
	}
	return out
}

func key(ns, name string) string { return ns + "/" + name }
