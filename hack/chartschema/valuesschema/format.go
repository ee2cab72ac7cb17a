package valuesschema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// inlineWidth is the longest object or array written on one line; short ones (enums, defaults,
// `{"type": "string"}`) would otherwise take a line per element and bury the schema's shape.
const inlineWidth = 80

// jvalue is a parsed JSON value that keeps object key order.
type jvalue struct {
	scalar string   // encoded scalar, when not a container
	delim  byte     // '{' or '[' for containers
	keys   []string // object keys, in order
	elems  []*jvalue
}

// Pretty re-indents compact JSON with two spaces, keeping containers that fit in inlineWidth on
// one line.
func Pretty(compact []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(compact))
	dec.UseNumber()
	v, err := parseValue(dec)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	write(&b, v, "")
	b.WriteByte('\n')
	return []byte(b.String()), nil
}

func parseValue(dec *json.Decoder) (*jvalue, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		raw, err := encode(tok)
		return &jvalue{scalar: raw}, err
	}
	v := &jvalue{delim: byte(d)}
	for dec.More() {
		if v.delim == '{' {
			k, err := dec.Token()
			if err != nil {
				return nil, err
			}
			ks, ok := k.(string)
			if !ok {
				return nil, fmt.Errorf("object key %v is not a string", k)
			}
			v.keys = append(v.keys, ks)
		}
		e, err := parseValue(dec)
		if err != nil {
			return nil, err
		}
		v.elems = append(v.elems, e)
	}
	_, err = dec.Token() // the closing delimiter
	return v, err
}

func (v *jvalue) closing() byte {
	if v.delim == '{' {
		return '}'
	}
	return ']'
}

func key(k string) string {
	raw, _ := encode(k)
	return raw + ": "
}

// encode is json.Marshal without HTML escaping: the schema is read by people and by Helm, never
// embedded in HTML, and `v\u003cversion\u003e` reads worse than `v<version>`.
func encode(v any) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// inline is v on one line, with a space after each separator.
func inline(v *jvalue) string {
	if v.delim == 0 {
		return v.scalar
	}
	parts := make([]string, len(v.elems))
	for i, e := range v.elems {
		if v.delim == '{' {
			parts[i] = key(v.keys[i])
		}
		parts[i] += inline(e)
	}
	return string(v.delim) + strings.Join(parts, ", ") + string(v.closing())
}

func write(b *strings.Builder, v *jvalue, indent string) {
	if one := inline(v); len(one) <= inlineWidth || len(v.elems) == 0 {
		b.WriteString(one)
		return
	}
	b.WriteByte(v.delim)
	inner := indent + "  "
	for i, e := range v.elems {
		b.WriteString("\n" + inner)
		if v.delim == '{' {
			b.WriteString(key(v.keys[i]))
		}
		write(b, e, inner)
		if i < len(v.elems)-1 {
			b.WriteByte(',')
		}
	}
	b.WriteString("\n" + indent)
	b.WriteByte(v.closing())
}
