package fluxexamples

import (
	"fmt"

	"github.com/Masterminds/semver/v3"
	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
)

// Check reports every reference that does not resolve inside the set and every HelmRelease that is
// not pinned to one exact chart version from a HelmRepository of the set.
func Check(objs []Object) []error {
	repos := map[string]bool{}
	releases := map[string]bool{}
	for _, o := range objs {
		switch o.Object.(type) {
		case *sourcev1.HelmRepository:
			repos[key(o.GetNamespace(), o.GetName())] = true
		case *helmv2.HelmRelease:
			releases[key(o.GetNamespace(), o.GetName())] = true
		}
	}
	var errs []error
	for _, o := range objs {
		hr, ok := o.Object.(*helmv2.HelmRelease)
		if !ok {
			continue
		}
		for _, err := range checkRelease(hr, repos, releases) {
			errs = append(errs, fmt.Errorf("%s: HelmRelease %s/%s: %w", o.File, hr.Namespace, hr.Name, err))
		}
	}
	return errs
}

func checkRelease(hr *helmv2.HelmRelease, repos, releases map[string]bool) []error {
	var errs []error
	if hr.Spec.Chart == nil {
		return append(errs, fmt.Errorf("spec.chart is required: the examples install from a HelmRepository"))
	}
	c := hr.Spec.Chart.Spec
	if c.SourceRef.Kind != sourcev1.HelmRepositoryKind {
		errs = append(errs, fmt.Errorf("sourceRef.kind is %q, want %s", c.SourceRef.Kind, sourcev1.HelmRepositoryKind))
	}
	if ns := defaultNS(c.SourceRef.Namespace, hr.Namespace); !repos[key(ns, c.SourceRef.Name)] {
		errs = append(errs, fmt.Errorf("sourceRef %s/%s is not among the examples", ns, c.SourceRef.Name))
	}
	if _, err := semver.StrictNewVersion(c.Version); err != nil {
		errs = append(errs, fmt.Errorf("chart version %q is not one exact version: %v", c.Version, err))
	}
	for _, d := range hr.Spec.DependsOn {
		if ns := defaultNS(d.Namespace, hr.Namespace); !releases[key(ns, d.Name)] {
			errs = append(errs, fmt.Errorf("dependsOn %s/%s is not among the examples", ns, d.Name))
		}
	}
	if hr.Spec.Interval.Duration <= 0 {
		errs = append(errs, fmt.Errorf("spec.interval must be positive"))
	}
	return errs
}

func defaultNS(ns, fallback string) string {
	if ns == "" {
		return fallback
	}
	return ns
}

func key(ns, name string) string { return ns + "/" + name }
