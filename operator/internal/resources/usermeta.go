package resources

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

// appliedKeys is what AnnotationUserMetadata records: the keys spec.additionalMetadata put on
// an object, so that a key removed from the spec is removed from the object too, and nothing
// else anyone set is touched.
type appliedKeys struct {
	Labels      []string `json:"labels,omitempty"`
	Annotations []string `json:"annotations,omitempty"`
}

// SyncUserMetadata brings obj's labels and annotations in step with additionalMetadata a:
// its keys set to its values, keys it set before and no longer has removed; reserved keys, the
// operator's own labels (owned, which win) and everything anyone else set are left alone. It
// reports whether obj changed. Metadata changes restart nothing: a Pod's revision hashes its
// spec only.
func SyncUserMetadata(obj metav1.Object, a *v1alpha2.AdditionalMetadata, owned map[string]string) bool {
	var before appliedKeys
	_ = json.Unmarshal([]byte(obj.GetAnnotations()[v1alpha2.AnnotationUserMetadata]), &before)
	wantLabels := MergeMetadata(UserLabels(a), nil)
	for k := range owned {
		delete(wantLabels, k)
	}
	wantAnnotations := MergeMetadata(UserAnnotations(a), nil)
	labels := syncKeys(obj.GetLabels(), wantLabels, before.Labels, owned)
	annotations := syncKeys(obj.GetAnnotations(), wantAnnotations, before.Annotations, nil)
	now := appliedKeys{Labels: sortedKeys(wantLabels), Annotations: sortedKeys(wantAnnotations)}
	if len(now.Labels)+len(now.Annotations) == 0 {
		delete(annotations, v1alpha2.AnnotationUserMetadata)
	} else {
		raw, _ := json.Marshal(now)
		annotations[v1alpha2.AnnotationUserMetadata] = string(raw)
	}
	changed := !maps.Equal(labels, obj.GetLabels()) || !maps.Equal(annotations, obj.GetAnnotations())
	obj.SetLabels(nilIfEmpty(labels))
	obj.SetAnnotations(nilIfEmpty(annotations))
	return changed
}

// OwnedLabels are obj's labels but those additionalMetadata put there (by its record): on an
// object just built, exactly the operator's own.
func OwnedLabels(obj metav1.Object) map[string]string {
	var applied appliedKeys
	_ = json.Unmarshal([]byte(obj.GetAnnotations()[v1alpha2.AnnotationUserMetadata]), &applied)
	out := maps.Clone(obj.GetLabels())
	for _, k := range applied.Labels {
		delete(out, k)
	}
	return out
}

// syncKeys is have with want's entries set and the keys of applied that want lost removed.
func syncKeys(have, want map[string]string, applied []string, owned map[string]string) map[string]string {
	out := maps.Clone(have)
	if out == nil {
		out = map[string]string{}
	}
	for _, k := range applied {
		_, ours := owned[k]
		if _, keep := want[k]; !keep && !ours && !strings.HasPrefix(k, v1alpha2.LabelPrefix) {
			delete(out, k)
		}
	}
	maps.Copy(out, want)
	return out
}

func sortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }

func nilIfEmpty(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return m
}
