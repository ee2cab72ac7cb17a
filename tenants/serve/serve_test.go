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
		name        string
		in          Input
		serve, bind bool
		why, move   string
	}{
		{"nothing opts in", Input{Ours: "ns.tcp"}, false, false, NotOptedIn, ""},
		{"default serves", Input{Default: true, Ours: "ns.tcp"}, true, true, ByDefault, MoveUnserved},
		{"TCP opts in", Input{TCPAnnotations: on, Ours: "ns.tcp"}, true, true, OptedIn, MoveUnserved},
		{"namespace opts in", Input{NamespaceLabels: on, Ours: "ns.tcp"}, true, true, OptedIn, MoveUnserved},
		{"TCP opts out of a namespace that opts in", Input{TCPAnnotations: off, NamespaceLabels: on, Ours: "ns.tcp"}, false, false, OptedOut, ""},
		{"TCP opts in within a namespace that opts out", Input{TCPAnnotations: on, NamespaceLabels: off, Ours: "ns.tcp"}, true, true, OptedIn, MoveUnserved},
		{"namespace opts out of the default", Input{NamespaceLabels: off, Default: true, Ours: "ns.tcp"}, false, false, OptedOut, ""},
		{"foreign DataStore, opted in", Input{TCPAnnotations: on, Default: true, DataStore: "shared", Ours: "ns.tcp"}, false, false, Foreign, ""},
		{"foreign DataStore beside Kamaji's default", Input{TCPAnnotations: on, DataStore: "shared", Ours: "ns.tcp", KamajiDefault: "default"}, false, false, Foreign, ""},
		{"Kamaji's default is foreign when the default is off", Input{TCPAnnotations: on, DataStore: "default", Ours: "ns.tcp"}, false, false, Foreign, ""},
		{"bound, opted out since", Input{TCPAnnotations: off, DataStore: "ns.tcp", Ours: "ns.tcp"}, true, true, Bound, ""},
		{"bound, Kamaji's default configured", Input{DataStore: "ns.tcp", Ours: "ns.tcp", KamajiDefault: "default", HasServed: true}, true, true, Bound, ""},
		{"invalid annotation", Input{TCPAnnotations: bad, Default: true, Ours: "ns.tcp"}, false, false, InvalidOptIn, ""},
		{"invalid namespace label", Input{NamespaceLabels: bad, Ours: "ns.tcp"}, false, false, InvalidOptIn, ""},
		// Kamaji's webhook filled spec.dataStore with its default DataStore.
		{"on Kamaji's default, not opted in", Input{DataStore: "default", Ours: "ns.tcp", KamajiDefault: "default"}, false, false, NotOptedIn, ""},
		{"on Kamaji's default, opted out", Input{TCPAnnotations: off, Default: true, DataStore: "default", Ours: "ns.tcp", KamajiDefault: "default"}, false, false, OptedOut, ""},
		{"on Kamaji's default, invalid opt-in", Input{TCPAnnotations: bad, DataStore: "default", Ours: "ns.tcp", KamajiDefault: "default"}, false, false, InvalidOptIn, ""},
		{"on Kamaji's default, never served: moves at once", Input{TCPAnnotations: on, DataStore: "default", Ours: "ns.tcp", KamajiDefault: "default"}, true, true, OptedIn, MoveUnserved},
		{"on Kamaji's default by the namespace's label, never served", Input{NamespaceLabels: on, DataStore: "default", Ours: "ns.tcp", KamajiDefault: "default"}, true, true, OptedIn, MoveUnserved},
		{"on Kamaji's default by the cluster default, never served", Input{Default: true, DataStore: "default", Ours: "ns.tcp", KamajiDefault: "default"}, true, true, ByDefault, MoveUnserved},
		{"on Kamaji's default, never served, etcd Available", Input{TCPAnnotations: on, DataStore: "default", Ours: "ns.tcp", KamajiDefault: "default", EtcdAvailable: true}, true, true, OptedIn, MoveUnserved},
		{"on Kamaji's default, served, etcd not Available: waits", Input{TCPAnnotations: on, DataStore: "default", Ours: "ns.tcp", KamajiDefault: "default", HasServed: true}, true, false, OptedIn, MoveWait},
		{"on Kamaji's default, served, etcd Available: migrates", Input{TCPAnnotations: on, DataStore: "default", Ours: "ns.tcp", KamajiDefault: "default", HasServed: true, EtcdAvailable: true}, true, true, OptedIn, MoveMigrate},
		{"a renamed Kamaji default", Input{TCPAnnotations: on, DataStore: "etcd-main", Ours: "ns.tcp", KamajiDefault: "etcd-main", HasServed: true, EtcdAvailable: true}, true, true, OptedIn, MoveMigrate},
		{"no spec.dataStore, served before: waits", Input{TCPAnnotations: on, Ours: "ns.tcp", KamajiDefault: "default", HasServed: true}, true, false, OptedIn, MoveWait},
		{"no spec.dataStore, served before, etcd Available", Input{TCPAnnotations: on, Ours: "ns.tcp", HasServed: true, EtcdAvailable: true}, true, true, OptedIn, MoveMigrate},
	}
	for _, tc := range cases {
		got := Decide(tc.in)
		if got.Serve != tc.serve || got.Bind != tc.bind || got.Reason != tc.why || got.Move != tc.move {
			t.Errorf("%s: serve %v bind %v (%s, move %q), want serve %v bind %v (%s, move %q)", tc.name,
				got.Serve, got.Bind, got.Reason, got.Move, tc.serve, tc.bind, tc.why, tc.move)
		}
		if (got.Reason == Foreign || got.Reason == InvalidOptIn) && got.Message == "" {
			t.Errorf("%s: no message for %s", tc.name, got.Reason)
		}
	}
}
