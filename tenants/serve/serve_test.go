package serve

import (
	"testing"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

func TestDecide(t *testing.T) {
	on := map[string]string{v1alpha2.AnnotationTenantEtcd: "true"}
	off := map[string]string{v1alpha2.AnnotationTenantEtcd: "false"}
	bad := map[string]string{v1alpha2.AnnotationTenantEtcd: "yes"}
	cases := []struct {
		name  string
		in    Input
		serve bool
		why   string
	}{
		{"nothing opts in", Input{Ours: "ns.tcp"}, false, NotOptedIn},
		{"default serves", Input{Default: true, Ours: "ns.tcp"}, true, ByDefault},
		{"TCP opts in", Input{TCPAnnotations: on, Ours: "ns.tcp"}, true, OptedIn},
		{"namespace opts in", Input{NamespaceLabels: on, Ours: "ns.tcp"}, true, OptedIn},
		{"TCP opts out of a namespace that opts in", Input{TCPAnnotations: off, NamespaceLabels: on, Ours: "ns.tcp"}, false, OptedOut},
		{"TCP opts in within a namespace that opts out", Input{TCPAnnotations: on, NamespaceLabels: off, Ours: "ns.tcp"}, true, OptedIn},
		{"namespace opts out of the default", Input{NamespaceLabels: off, Default: true, Ours: "ns.tcp"}, false, OptedOut},
		{"foreign DataStore, opted in", Input{TCPAnnotations: on, Default: true, DataStore: "default", Ours: "ns.tcp"}, false, Foreign},
		{"bound, opted out since", Input{TCPAnnotations: off, DataStore: "ns.tcp", Ours: "ns.tcp"}, true, Bound},
		{"invalid annotation", Input{TCPAnnotations: bad, Default: true, Ours: "ns.tcp"}, false, InvalidOptIn},
		{"invalid namespace label", Input{NamespaceLabels: bad, Ours: "ns.tcp"}, false, InvalidOptIn},
	}
	for _, tc := range cases {
		got := Decide(tc.in)
		if got.Serve != tc.serve || got.Reason != tc.why {
			t.Errorf("%s: serve %v (%s), want %v (%s)", tc.name, got.Serve, got.Reason, tc.serve, tc.why)
		}
		if (got.Reason == Foreign || got.Reason == InvalidOptIn) && got.Message == "" {
			t.Errorf("%s: no message for %s", tc.name, got.Reason)
		}
	}
}
