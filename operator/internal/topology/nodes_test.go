package topology

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestVolumePinned(t *testing.T) {
	term := func(key string, values ...string) corev1.NodeSelectorTerm {
		return corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}}}
	}
	pv := func(terms ...corev1.NodeSelectorTerm) *corev1.PersistentVolume {
		p := &corev1.PersistentVolume{}
		if terms != nil {
			p.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: terms}}
		}
		return p
	}
	field := corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"n1"}}}}
	cases := []struct {
		name string
		pv   *corev1.PersistentVolume
		want bool
	}{
		{"no PV known", nil, false},
		{"network storage: no node affinity", pv(), false},
		{"local volume on the node", pv(term(corev1.LabelHostname, "n1")), true},
		{"local volume by node name field", pv(field), true},
		{"local volume on another node", pv(term(corev1.LabelHostname, "n2")), false},
		{"zonal volume", pv(term(corev1.LabelTopologyZone, "z1")), false},
		{"either of two nodes", pv(term(corev1.LabelHostname, "n1", "n2")), false},
		{"one term pins, another admits a zone", pv(term(corev1.LabelHostname, "n1"), term(corev1.LabelTopologyZone, "z1")), false},
	}
	for _, tc := range cases {
		if got := VolumePinned(tc.pv, "n1"); got != tc.want {
			t.Errorf("%s: pinned %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestStateOf(t *testing.T) {
	since := metav1.NewTime(time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC))
	n := &corev1.Node{Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: corev1.TaintNodeOutOfService, Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute}}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, LastTransitionTime: since}}}}
	if s := StateOf(n); !s.NotReady || !s.NotReadySince.Equal(since.Time) || !s.OutOfService {
		t.Errorf("%+v", s)
	}
	if s := StateOf(nil); s.NotReady || s.OutOfService {
		t.Errorf("unknown node: %+v", s)
	}
}
