package podfiles

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// File is one file of a Secret, ConfigMap, downward API or projected volume.
type File struct {
	Path string // relative to the volume root
	Data []byte
	Mode os.FileMode
}

// DefaultMode of volume files when the Pod gives none (0644, like the kubelet).
const DefaultMode = 0o644

// KeysToFiles projects data (a Secret's or ConfigMap's keys) to files: every key when items is
// empty, else only the listed keys at their paths. A listed key that is missing is an error unless
// the source is optional.
func KeysToFiles(data map[string][]byte, items []corev1.KeyToPath, defaultMode *int32, optional bool) ([]File, error) {
	mode := modeOr(defaultMode, DefaultMode)
	var files []File
	if len(items) == 0 {
		keys := make([]string, 0, len(data))
		for k := range data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			files = append(files, File{Path: k, Data: data[k], Mode: mode})
		}
		return files, nil
	}
	for _, item := range items {
		v, ok := data[item.Key]
		if !ok {
			if optional {
				continue
			}
			return nil, fmt.Errorf("key %q not found", item.Key)
		}
		files = append(files, File{Path: item.Path, Data: v, Mode: modeOr(item.Mode, mode)})
	}
	return files, nil
}

// ConfigMapData merges a ConfigMap's string and binary data.
func ConfigMapData(cm *corev1.ConfigMap) map[string][]byte {
	out := make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
	for k, v := range cm.Data {
		out[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		out[k] = v
	}
	return out
}

func modeOr(m *int32, def os.FileMode) os.FileMode {
	if m == nil {
		return def
	}
	return os.FileMode(*m) & os.ModePerm
}

// DownwardFiles renders downward API items of pod (fieldRef and resourceFieldRef).
func DownwardFiles(pod *corev1.Pod, items []corev1.DownwardAPIVolumeFile, defaultMode *int32) ([]File, error) {
	mode := modeOr(defaultMode, DefaultMode)
	files := make([]File, 0, len(items))
	for _, item := range items {
		var value string
		var err error
		switch {
		case item.FieldRef != nil:
			value, err = FieldValue(pod, item.FieldRef.FieldPath)
		case item.ResourceFieldRef != nil:
			value, err = ResourceValue(pod, item.ResourceFieldRef)
		default:
			err = fmt.Errorf("downward API item %q has no source", item.Path)
		}
		if err != nil {
			return nil, err
		}
		files = append(files, File{Path: item.Path, Data: []byte(value), Mode: modeOr(item.Mode, mode)})
	}
	return files, nil
}

// FieldValue resolves a downward API field path of pod.
func FieldValue(pod *corev1.Pod, path string) (string, error) {
	if key, ok := subscript(path, "metadata.labels"); ok {
		return pod.Labels[key], nil
	}
	if key, ok := subscript(path, "metadata.annotations"); ok {
		return pod.Annotations[key], nil
	}
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.podIP":
		return pod.Status.PodIP, nil
	case "status.hostIP":
		return pod.Status.HostIP, nil
	case "status.podIPs":
		ips := make([]string, 0, len(pod.Status.PodIPs))
		for _, ip := range pod.Status.PodIPs {
			ips = append(ips, ip.IP)
		}
		return strings.Join(ips, ","), nil
	}
	return "", fmt.Errorf("unsupported downward API field %q", path)
}

// subscript parses "metadata.labels['key']".
func subscript(path, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(path, prefix+"['")
	if !ok || !strings.HasSuffix(rest, "']") {
		return "", false
	}
	return strings.TrimSuffix(rest, "']"), true
}

// formatMap renders labels/annotations like the kubelet: sorted key="quoted value" lines.
func formatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	lines := make([]string, 0, len(keys))
	for _, k := range keys {
		lines = append(lines, k+"="+strconv.Quote(m[k]))
	}
	return strings.Join(lines, "\n")
}

// ResourceValue resolves a resourceFieldRef against the named container's limits, falling back to
// the node's capacity (cpu 8, memory 32Gi) like the kubelet does for unset limits.
func ResourceValue(pod *corev1.Pod, ref *corev1.ResourceFieldSelector) (string, error) {
	var c *corev1.Container
	for i := range pod.Spec.Containers {
		if ref.ContainerName == "" || pod.Spec.Containers[i].Name == ref.ContainerName {
			c = &pod.Spec.Containers[i]
			break
		}
	}
	if c == nil {
		return "", fmt.Errorf("resourceFieldRef: no container %q", ref.ContainerName)
	}
	kind, name, _ := strings.Cut(ref.Resource, ".")
	list := c.Resources.Limits
	if kind == "requests" {
		list = c.Resources.Requests
	}
	q, ok := list[corev1.ResourceName(name)]
	if !ok {
		q = NodeCapacity()[corev1.ResourceName(name)]
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	if name == "cpu" {
		return strconv.FormatInt((q.MilliValue()+divisor.MilliValue()-1)/divisor.MilliValue(), 10), nil
	}
	return strconv.FormatInt((q.Value()+divisor.Value()-1)/divisor.Value(), 10), nil
}

// NodeCapacity is what every node of the local cluster advertises.
func NodeCapacity() corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("8"),
		corev1.ResourceMemory:           resource.MustParse("32Gi"),
		corev1.ResourcePods:             resource.MustParse("110"),
		corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
	}
}
