package main

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
)

// ownDefaultsFile is a package's own file of the values in which it differs from the chart it
// flattens (e.g. the tenant app's Kamaji DataStore by default, as Cozystack's own etcd app renders
// one; the operator's two replicas). A Tenant's HelmRelease passes no values of its own, so a
// setting Cozystack needs must be a default of the package.
const ownDefaultsFile = ownPrefix + "defaults.yaml"

// override is one value the package sets over the chart's default, or, with remove, a value the
// package leaves out (a null in the defaults file, as a null removes a default in Helm).
type override struct {
	path   []string
	value  any
	remove bool
}

// applyDefaults sets each leaf of overrides in the values.yaml source, keeping its comments (the
// @param annotations among them), and returns the result and the leaves set. A null leaf removes
// the value and its @param annotations. A key the chart does not have is an error, so a renamed
// chart value cannot drop an override silently.
func applyDefaults(values, overrides []byte) ([]byte, []override, error) {
	var doc, over yamlv3.Node
	if err := yamlv3.Unmarshal(values, &doc); err != nil {
		return nil, nil, fmt.Errorf("values: %w", err)
	}
	if err := yamlv3.Unmarshal(overrides, &over); err != nil {
		return nil, nil, fmt.Errorf("defaults: %w", err)
	}
	if len(over.Content) == 0 {
		return values, nil, nil
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yamlv3.MappingNode || over.Content[0].Kind != yamlv3.MappingNode {
		return nil, nil, fmt.Errorf("values and defaults must both be mappings")
	}
	var set []override
	if err := mergeInto(doc.Content[0], over.Content[0], nil, &set); err != nil {
		return nil, nil, err
	}
	var b bytes.Buffer
	enc := yamlv3.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, nil, err
	}
	// The encoder drops blank lines; put back the one before each section heading.
	out := strings.ReplaceAll(b.String(), "\n## @section", "\n\n## @section")
	return []byte(dropAnnotations(out, set)), set, nil
}

// dropAnnotations removes the @param lines of the values removed (and of their fields).
func dropAnnotations(values string, set []override) string {
	lines := strings.SplitAfter(values, "\n")
	out := lines[:0]
	for _, line := range lines {
		if !annotatesRemoved(line, set) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "")
}

// paramPath finds the path of a @param line as hack/chartschema reads it (its paramRe).
var paramPath = regexp.MustCompile(`^##\s+@param\s+\{.+?\}\s+(\S+)\s+-\s`)

func annotatesRemoved(line string, set []override) bool {
	m := paramPath.FindStringSubmatch(strings.TrimSpace(line))
	if m == nil {
		return false
	}
	for _, o := range set {
		if p := strings.Join(o.path, "."); o.remove && (m[1] == p || strings.HasPrefix(m[1], p+".")) {
			return true
		}
	}
	return false
}

// mergeInto replaces, in dst, the value of every leaf of src; a non-empty mapping in src is
// descended into, anything else (a scalar, a list, an empty or a new mapping) replaces dst's.
func mergeInto(dst, src *yamlv3.Node, path []string, set *[]override) error {
	for i := 0; i+1 < len(src.Content); i += 2 {
		key, val := src.Content[i].Value, src.Content[i+1]
		p := append(append([]string{}, path...), key)
		target := lookup(dst, key)
		if target == nil {
			return fmt.Errorf("defaults set %s, which charts/etcd/values.yaml does not have", strings.Join(p, "."))
		}
		if val.Tag == "!!null" {
			remove(dst, key)
			*set = append(*set, override{path: p, remove: true})
			continue
		}
		if val.Kind == yamlv3.MappingNode && len(val.Content) > 0 && target.Kind == yamlv3.MappingNode && len(target.Content) > 0 {
			if err := mergeInto(target, val, p, set); err != nil {
				return err
			}
			continue
		}
		var v any
		if err := val.Decode(&v); err != nil {
			return fmt.Errorf("%s: %w", strings.Join(p, "."), err)
		}
		head, line := target.HeadComment, target.LineComment
		*target = *val
		target.HeadComment, target.LineComment = head, line
		*set = append(*set, override{path: p, value: v})
	}
	return nil
}

// remove deletes key from the mapping m; a comment above it moves to the key after it.
func remove(m *yamlv3.Node, key string) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value != key {
			continue
		}
		if c := m.Content[i].HeadComment; c != "" && i+2 < len(m.Content) {
			next := m.Content[i+2]
			next.HeadComment = strings.TrimSpace(c + "\n" + next.HeadComment)
		}
		m.Content = append(m.Content[:i], m.Content[i+2:]...)
		return
	}
}

func lookup(m *yamlv3.Node, key string) *yamlv3.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// ownValuesFile holds the values only a package has (the tenant package's), with their @param annotations:
// the names Cozystack's own etcd app gives its values (size, storageClass, a flat resources), so
// the values existing apps carry keep their meaning. They come first in the package's values.yaml,
// as in Cozystack's app, and so first in the dashboard's form.
const ownValuesFile = ownPrefix + "values.yaml"

// withOwnValues puts the package's own values before the chart's. A key the chart's values still
// have is an error: the package would then have two values of one name.
func withOwnValues(chartValues, own []byte) ([]byte, error) {
	var chart, pkg map[string]any
	if err := yamlv3.Unmarshal(chartValues, &chart); err != nil {
		return nil, err
	}
	if err := yamlv3.Unmarshal(own, &pkg); err != nil {
		return nil, err
	}
	for k := range pkg {
		if _, dup := chart[k]; dup {
			return nil, fmt.Errorf("%s is a value of charts/etcd too; leave it out of the package with a null in %s first", k, ownDefaultsFile)
		}
	}
	return append(append(bytes.TrimRight(own, "\n"), "\n\n"...), chartValues...), nil
}
