// Package envvars computes a container's environment like the kubelet: envFrom first, then env in
// order with $(VAR) expansion and valueFrom sources.
package envvars

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/cozystack/etcd-operator/e2e/nodeagent/podfiles"
)

// Sources looks up the objects env vars refer to; a nil object with nil error means "not found".
type Sources interface {
	Secret(namespace, name string) (*corev1.Secret, error)
	ConfigMap(namespace, name string) (*corev1.ConfigMap, error)
}

// Var is one resolved variable.
type Var struct{ Name, Value string }

// Resolve returns the container's environment in kubelet order (later entries win).
// pod.Status.PodIP/HostIP must already be set so that status.podIP fieldRefs resolve.
func Resolve(pod *corev1.Pod, c *corev1.Container, src Sources) ([]Var, error) {
	var out []Var
	values := map[string]string{}
	set := func(name, value string) {
		if _, ok := values[name]; !ok {
			out = append(out, Var{Name: name})
		}
		values[name] = value
	}
	for _, from := range c.EnvFrom {
		data, err := envFromData(pod.Namespace, from, src)
		if err != nil {
			return nil, err
		}
		for _, k := range sortedKeys(data) {
			set(from.Prefix+k, data[k])
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			set(e.Name, Expand(e.Value, values))
			continue
		}
		v, ok, err := valueFrom(pod, c, e.ValueFrom, src)
		if err != nil {
			return nil, fmt.Errorf("env %s: %w", e.Name, err)
		}
		if ok {
			set(e.Name, v)
		}
	}
	for i := range out {
		out[i].Value = values[out[i].Name]
	}
	return out, nil
}

func envFromData(ns string, from corev1.EnvFromSource, src Sources) (map[string]string, error) {
	data := map[string]string{}
	switch {
	case from.ConfigMapRef != nil:
		cm, err := src.ConfigMap(ns, from.ConfigMapRef.Name)
		if err != nil {
			return nil, err
		}
		if cm == nil {
			return data, optionalOr(from.ConfigMapRef.Optional, fmt.Errorf("configmap %s/%s not found", ns, from.ConfigMapRef.Name))
		}
		for k, v := range podfiles.ConfigMapData(cm) {
			data[k] = string(v)
		}
	case from.SecretRef != nil:
		s, err := src.Secret(ns, from.SecretRef.Name)
		if err != nil {
			return nil, err
		}
		if s == nil {
			return data, optionalOr(from.SecretRef.Optional, fmt.Errorf("secret %s/%s not found", ns, from.SecretRef.Name))
		}
		for k, v := range s.Data {
			data[k] = string(v)
		}
	}
	return data, nil
}

// valueFrom resolves one source; ok is false for a missing optional key (the variable is then unset).
func valueFrom(pod *corev1.Pod, c *corev1.Container, vf *corev1.EnvVarSource, src Sources) (string, bool, error) {
	switch {
	case vf.FieldRef != nil:
		v, err := podfiles.FieldValue(pod, vf.FieldRef.FieldPath)
		return v, err == nil, err
	case vf.ResourceFieldRef != nil:
		ref := vf.ResourceFieldRef.DeepCopy()
		if ref.ContainerName == "" {
			ref.ContainerName = c.Name
		}
		v, err := podfiles.ResourceValue(pod, ref)
		return v, err == nil, err
	case vf.SecretKeyRef != nil:
		s, err := src.Secret(pod.Namespace, vf.SecretKeyRef.Name)
		if err != nil {
			return "", false, err
		}
		if s != nil {
			if v, ok := s.Data[vf.SecretKeyRef.Key]; ok {
				return string(v), true, nil
			}
		}
		return "", false, optionalOr(vf.SecretKeyRef.Optional,
			fmt.Errorf("key %q of secret %s/%s not found", vf.SecretKeyRef.Key, pod.Namespace, vf.SecretKeyRef.Name))
	case vf.ConfigMapKeyRef != nil:
		cm, err := src.ConfigMap(pod.Namespace, vf.ConfigMapKeyRef.Name)
		if err != nil {
			return "", false, err
		}
		if cm != nil {
			if v, ok := podfiles.ConfigMapData(cm)[vf.ConfigMapKeyRef.Key]; ok {
				return string(v), true, nil
			}
		}
		return "", false, optionalOr(vf.ConfigMapKeyRef.Optional,
			fmt.Errorf("key %q of configmap %s/%s not found", vf.ConfigMapKeyRef.Key, pod.Namespace, vf.ConfigMapKeyRef.Name))
	}
	return "", false, fmt.Errorf("unsupported valueFrom")
}

func optionalOr(optional *bool, err error) error {
	if optional != nil && *optional {
		return nil
	}
	return err
}

// Expand replaces $(NAME) with earlier variables' values; $$ escapes, unknown references stay as is.
func Expand(s string, values map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch next := s[i+1]; {
		case next == '$':
			b.WriteByte('$')
			i++
		case next == '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+2+end]
			if v, ok := values[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

// ExpandArgs expands $(VAR) references of a command line with the container's environment.
func ExpandArgs(args []string, env []Var) []string {
	values := make(map[string]string, len(env))
	for _, v := range env {
		values[v.Name] = v.Value
	}
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = Expand(a, values)
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys) // a stable environment across restarts
	return keys
}
