package specs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"sigs.k8s.io/yaml"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

// ErrTLSInTemplate: the tenant controller gives every tenant's etcd its own CA; a template
// cannot choose other TLS material.
var ErrTLSInTemplate = errors.New("spec.tls is set by the tenant controller (every tenant etcd gets its own CA); remove it from the template")

// ClusterSpec is an EtcdCluster spec as the user wrote it (Raw: what is applied, so fields left
// out stay the API's defaults) and as it decodes (Typed: what was checked).
type ClusterSpec struct {
	Raw   map[string]any
	Typed v1alpha2.EtcdClusterSpec
}

// Spec is the EtcdCluster spec for one TCP: the cluster-wide template (YAML or JSON, may be
// empty) with the TCP's override (v1alpha2.AnnotationTenantEtcdSpec, may be empty) merged over
// it as a JSON merge patch, and the tenant defaults (withTenantDefaults) where both leave an
// option unset. Unknown fields are refused, so a typo is an error, not a default.
func Spec(template []byte, override string) (ClusterSpec, error) {
	var spec ClusterSpec
	base, err := toJSON(template, "the template")
	if err != nil {
		return spec, err
	}
	if override != "" {
		patch, err := toJSON([]byte(override), "annotation "+v1alpha2.AnnotationTenantEtcdSpec)
		if err != nil {
			return spec, err
		}
		if base, err = jsonpatch.MergePatch(base, patch); err != nil {
			return spec, fmt.Errorf("merging annotation %s over the template: %w", v1alpha2.AnnotationTenantEtcdSpec, err)
		}
	}
	dec := json.NewDecoder(bytes.NewReader(base))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&spec.Typed); err != nil {
		return spec, fmt.Errorf("the EtcdCluster spec from the template and annotation %s: %w", v1alpha2.AnnotationTenantEtcdSpec, err)
	}
	if spec.Typed.TLS != nil {
		return spec, ErrTLSInTemplate
	}
	if err := json.Unmarshal(base, &spec.Raw); err != nil {
		return spec, err
	}
	withTenantDefaults(&spec)
	return spec, nil
}

// toJSON reads a YAML or JSON object; empty is {}.
func toJSON(b []byte, what string) ([]byte, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return []byte("{}"), nil
	}
	j, err := yaml.YAMLToJSON(b)
	if err != nil {
		return nil, fmt.Errorf("%s is not YAML or JSON: %w", what, err)
	}
	if !bytes.HasPrefix(bytes.TrimSpace(j), []byte("{")) {
		return nil, fmt.Errorf("%s must be an object (fields of an EtcdCluster spec)", what)
	}
	return j, nil
}
