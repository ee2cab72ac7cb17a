package specs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

// ErrClusterRefInBackup: the schedule backs up the tenant's own etcd; a template cannot name another.
var ErrClusterRefInBackup = errors.New("clusterRef is set by the tenant controller (the tenant's own etcd); remove it from the backup template")

// BackupSpec is the EtcdBackupSchedule spec for one TCP: the cluster-wide backup template (YAML
// or JSON, may be empty: no backups) with the TCP's override (v1alpha2.AnnotationTenantEtcdBackup)
// merged over it as a JSON merge patch; an override of null turns the TCP's backups off. Nil
// (and no error) means no schedule: an empty template or {} asks for none. Unknown fields are refused, as in Spec.
func BackupSpec(template []byte, override string) (*ClusterBackup, error) {
	base, err := toJSON(template, "the backup template")
	if err != nil {
		return nil, err
	}
	if string(base) == "{}" || string(base) == "null" { // an empty template (the chart's default) asks for no backups
		base = []byte("null")
	}
	if override != "" {
		patch := []byte("null")
		if strings.TrimSpace(override) != "null" {
			if patch, err = toJSON([]byte(override), "annotation "+v1alpha2.AnnotationTenantEtcdBackup); err != nil {
				return nil, err
			}
		}
		if base, err = mergeBackup(base, patch); err != nil {
			return nil, err
		}
	}
	if string(base) == "null" {
		return nil, nil
	}
	spec := &ClusterBackup{}
	dec := json.NewDecoder(bytes.NewReader(base))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&spec.Typed); err != nil {
		return nil, fmt.Errorf("the EtcdBackupSchedule spec from the backup template and annotation %s: %w", v1alpha2.AnnotationTenantEtcdBackup, err)
	}
	if spec.Typed.ClusterRef.Name != "" {
		return nil, ErrClusterRefInBackup
	}
	return spec, json.Unmarshal(base, &spec.Raw)
}

// ClusterBackup is an EtcdBackupSchedule spec as written (Raw, what is applied) and as it
// decodes (Typed, what was checked).
type ClusterBackup struct {
	Raw   map[string]any
	Typed v1alpha2.EtcdBackupScheduleSpec
}

// mergeBackup merges patch over base; either may be null (no template, or backups off).
func mergeBackup(base, patch []byte) ([]byte, error) {
	switch {
	case string(patch) == "null":
		return patch, nil
	case string(base) == "null":
		base = []byte("{}")
	}
	merged, err := jsonpatch.MergePatch(base, patch)
	if err != nil {
		return nil, fmt.Errorf("merging annotation %s over the backup template: %w", v1alpha2.AnnotationTenantEtcdBackup, err)
	}
	return merged, nil
}

// BackupSchedule is the tenant's EtcdBackupSchedule: spec backs up the tenant's EtcdCluster,
// and every tenant's artifacts go under their own <namespace>/<tcp> below the destination's S3
// key or PVC subPath, so tenants sharing a bucket or a volume never overwrite one another.
func BackupSchedule(n Names, spec *ClusterBackup) *unstructured.Unstructured {
	body := runtime.DeepCopyJSON(spec.Raw)
	body["clusterRef"] = map[string]any{"name": n.Cluster}
	for kind, field := range map[string]string{"s3": "key", "pvc": "subPath"} {
		loc := []string{"snapshotTemplate", "destination", kind}
		if _, found, _ := unstructured.NestedMap(body, loc...); !found {
			continue
		}
		prefix, _, _ := unstructured.NestedString(body, append(loc, field)...)
		_ = unstructured.SetNestedField(body, path.Join(prefix, n.Namespace, n.TCP), append(loc, field)...) // loc is an object: cannot fail
	}
	return operatorObject("EtcdBackupSchedule", n.meta(n.BackupSchedule(), n.Namespace), body)
}
