package valuesschema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// quantityPattern is the Kubernetes resource.Quantity syntax (as in the apiextensions schema).
const quantityPattern = `^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$`

// Ordered is a JSON object whose keys keep their insertion order, so the schema reads in the
// same order as values.yaml and diffs stay small.
type Ordered struct {
	keys []string
	vals map[string]any
}

// Set adds or replaces a key.
func (o *Ordered) Set(k string, v any) {
	if o.vals == nil {
		o.vals = map[string]any{}
	}
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

// MarshalJSON writes the keys in insertion order.
func (o *Ordered) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		vb, err := json.Marshal(o.vals[k])
		if err != nil {
			return nil, err
		}
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// node is one key of the values tree: a declared param, an implicit parent of declared params,
// or both (a declared object whose fields are declared too).
type node struct {
	name     string
	param    *Param
	children []*node
}

func (n *node) child(name string) *node {
	for _, c := range n.children {
		if c.name == name {
			return c
		}
	}
	c := &node{name: name}
	n.children = append(n.children, c)
	return c
}

// buildTree places every param at its path. A param typed other than object cannot have
// declared fields below it, and a path may be declared once.
func buildTree(params []Param) (*node, error) {
	root := &node{}
	for i := range params {
		p := &params[i]
		n := root
		for _, k := range p.Path {
			n = n.child(k)
		}
		if n.param != nil {
			return nil, fmt.Errorf("line %d: %s is declared twice (first on line %d)", p.Line, p.Key(), n.param.Line)
		}
		n.param = p
	}
	return root, checkTree(root, "")
}

func checkTree(n *node, prefix string) error {
	for _, c := range n.children {
		key := strings.TrimPrefix(prefix+"."+c.name, ".")
		if c.param != nil && len(c.children) > 0 && c.param.Type != "object" {
			return fmt.Errorf("line %d: %s is %s but has declared fields below it", c.param.Line, key, c.param.Type)
		}
		if c.param != nil && len(c.children) > 0 && c.param.Values != "" {
			return fmt.Errorf("line %d: %s has both values: and declared fields", c.param.Line, key)
		}
		if err := checkTree(c, key); err != nil {
			return err
		}
	}
	return nil
}

// BuildSchema returns the draft-07 schema of a chart's values: objects assembled from declared
// fields reject unknown keys; leaves carry their type, modifiers and the values.yaml default.
func BuildSchema(title string, params []Param, values map[string]any) (*Ordered, error) {
	tree, err := buildTree(params)
	if err != nil {
		return nil, err
	}
	if err := checkCoverage(tree, values, ""); err != nil {
		return nil, err
	}
	s := &Ordered{}
	s.Set("$schema", "http://json-schema.org/draft-07/schema#")
	s.Set("title", title)
	body, err := objectSchema(tree, values, "")
	if err != nil {
		return nil, err
	}
	for _, k := range body.keys {
		s.Set(k, body.vals[k])
	}
	return s, nil
}

func objectSchema(n *node, values map[string]any, prefix string) (*Ordered, error) {
	s := &Ordered{}
	s.Set("type", "object")
	if n.param != nil {
		s.Set("description", n.param.Description)
	}
	props := &Ordered{}
	for _, c := range n.children {
		key := strings.TrimPrefix(prefix+"."+c.name, ".")
		v, ok := values[c.name]
		if !ok {
			return nil, fmt.Errorf("%s is declared but missing from values.yaml", key)
		}
		var (
			sub *Ordered
			err error
		)
		if len(c.children) > 0 {
			m, isMap := v.(map[string]any)
			if !isMap {
				return nil, fmt.Errorf("%s has declared fields but its value in values.yaml is %T, not a map", key, v)
			}
			sub, err = objectSchema(c, m, key)
		} else {
			sub, err = leafSchema(*c.param, v)
		}
		if err != nil {
			return nil, err
		}
		props.Set(c.name, sub)
	}
	s.Set("properties", props)
	s.Set("additionalProperties", false)
	return s, nil
}

func leafSchema(p Param, def any) (*Ordered, error) {
	s := &Ordered{}
	switch p.Type {
	case "quantity":
		s.Set("anyOf", []any{map[string]string{"type": "integer"}, map[string]string{"type": "string", "pattern": quantityPattern}})
		s.Set("x-kubernetes-int-or-string", true)
	case "int-or-string":
		s.Set("anyOf", []any{map[string]string{"type": "integer"}, map[string]string{"type": "string"}})
		s.Set("x-kubernetes-int-or-string", true)
	default:
		s.Set("type", p.Type)
	}
	s.Set("description", p.Description)
	if len(p.Enum) > 0 {
		enum, err := typedEnum(p)
		if err != nil {
			return nil, err
		}
		s.Set("enum", enum)
	}
	setConstraints(s, p)
	s.Set("default", def)
	return s, nil
}

func setConstraints(s *Ordered, p Param) {
	if p.Min != nil {
		s.Set("minimum", *p.Min)
	}
	if p.Max != nil {
		s.Set("maximum", *p.Max)
	}
	if p.MinLength != nil {
		s.Set("minLength", *p.MinLength)
	}
	if p.MaxLength != nil {
		s.Set("maxLength", *p.MaxLength)
	}
	if p.Pattern != "" {
		s.Set("pattern", p.Pattern)
	}
	if p.Items != "" {
		s.Set("items", map[string]string{"type": p.Items})
	}
	if p.Values != "" {
		s.Set("additionalProperties", map[string]string{"type": p.Values})
	}
}

func typedEnum(p Param) ([]any, error) {
	out := make([]any, 0, len(p.Enum))
	for _, e := range p.Enum {
		if p.Type == "string" {
			out = append(out, e)
			continue
		}
		f, err := strconv.ParseFloat(e, 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: %s: enum value %q is not a %s", p.Line, p.Key(), e, p.Type)
		}
		out = append(out, f)
	}
	return out, nil
}

// checkCoverage fails when values.yaml holds a key no param describes: an undocumented value
// would otherwise be rejected by the very schema generated for it.
func checkCoverage(n *node, values map[string]any, prefix string) error {
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		key := strings.TrimPrefix(prefix+"."+k, ".")
		var c *node
		for _, x := range n.children {
			if x.name == k {
				c = x
			}
		}
		if c == nil {
			return fmt.Errorf("%s is in values.yaml but has no `## @param` annotation", key)
		}
		if len(c.children) == 0 {
			continue // a declared leaf covers its whole value
		}
		if m, ok := values[k].(map[string]any); ok {
			if err := checkCoverage(c, m, key); err != nil {
				return err
			}
		}
	}
	return nil
}
