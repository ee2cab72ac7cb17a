package resources

import (
	"maps"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

func TestSyncUserMetadata(t *testing.T) {
	owned := map[string]string{v1alpha2.LabelCluster: "db", v1alpha2.LabelAppName: "etcd"}
	obj := &metav1.ObjectMeta{Labels: maps.Clone(owned), Annotations: map[string]string{"kubectl.kubernetes.io/last-applied": "x"}}
	step := func(a *v1alpha2.AdditionalMetadata, wantChanged bool, wantLabels map[string]string, wantAnn map[string]string) {
		t.Helper()
		if got := SyncUserMetadata(obj, a, owned); got != wantChanged {
			t.Errorf("changed=%v, want %v", got, wantChanged)
		}
		if !maps.Equal(obj.Labels, wantLabels) {
			t.Errorf("labels %v, want %v", obj.Labels, wantLabels)
		}
		ann := maps.Clone(obj.Annotations)
		delete(ann, v1alpha2.AnnotationUserMetadata)
		if len(ann) == 0 {
			ann = nil
		}
		if !maps.Equal(ann, wantAnn) {
			t.Errorf("annotations %v, want %v", ann, wantAnn)
		}
	}
	with := func(m map[string]string, kv ...string) map[string]string {
		out := maps.Clone(m)
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	other := map[string]string{"kubectl.kubernetes.io/last-applied": "x"}

	step(&v1alpha2.AdditionalMetadata{Labels: map[string]string{"team": "a", v1alpha2.LabelCluster: "spoof", v1alpha2.LabelAppName: "spoof"},
		Annotations: map[string]string{"owner": "ops"}}, true, with(owned, "team", "a"), with(other, "owner", "ops"))
	step(&v1alpha2.AdditionalMetadata{Labels: map[string]string{"team": "a"}, Annotations: map[string]string{"owner": "ops"}},
		false, with(owned, "team", "a"), with(other, "owner", "ops")) // nothing to do
	obj.Labels["added-by-someone"] = "y"
	step(&v1alpha2.AdditionalMetadata{Labels: map[string]string{"team": "b", "tier": "1"}}, true,
		with(owned, "team", "b", "tier", "1", "added-by-someone", "y"), other) // changed, added; owner removed
	step(nil, true, with(owned, "added-by-someone", "y"), other) // all user keys gone, others kept
	if _, ok := obj.Annotations[v1alpha2.AnnotationUserMetadata]; ok {
		t.Error("the record stays without any additional metadata")
	}
}
