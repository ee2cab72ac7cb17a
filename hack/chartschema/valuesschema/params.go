package valuesschema

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Param is one `## @param {type[,modifier...]} path - description` annotation of a values.yaml.
type Param struct {
	Path        []string
	Type        string   // canonical: string integer number boolean object array quantity int-or-string
	Enum        []string // raw enum values as written; converted to Type when the schema is built
	Min, Max    *float64
	MinLength   *int
	MaxLength   *int
	Pattern     string
	Items       string // element type of an array
	Values      string // value type of an object used as a map
	Description string
	Section     string
	Line        int
}

// Key is the dotted path, as written in the annotation.
func (p Param) Key() string { return strings.Join(p.Path, ".") }

// Section is a `## @section title` heading; its params follow it in the README table.
type Section struct {
	Title  string
	Params []Param
}

var (
	paramRe   = regexp.MustCompile(`^##\s+@param\s+\{(.+?)\}\s+(\S+)\s+-\s+(.*\S)\s*$`)
	sectionRe = regexp.MustCompile(`^##\s+@section\s+(.*\S)\s*$`)
	keyRe     = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_-]*$`)
)

// typeAliases maps the accepted spellings to the canonical type; int and bool are accepted
// because Cozystack's cozyvalues-gen writes them.
var typeAliases = map[string]string{
	"string": "string", "integer": "integer", "int": "integer", "number": "number",
	"boolean": "boolean", "bool": "boolean", "object": "object", "array": "array",
	"quantity": "quantity", "int-or-string": "int-or-string",
}

// scalarTypes may be used as array items or map values.
var scalarTypes = map[string]bool{"string": true, "integer": true, "number": true, "boolean": true, "object": true}

// ParseAnnotations reads every @section and @param line of a values.yaml, in file order.
// Any line starting with `## @` that is not a well-formed annotation is an error, so a typo
// cannot silently drop a parameter from the schema.
func ParseAnnotations(src []byte) ([]Section, error) {
	var sections []Section
	current := func() *Section {
		if len(sections) == 0 {
			sections = append(sections, Section{Title: "Parameters"})
		}
		return &sections[len(sections)-1]
	}
	sc := bufio.NewScanner(bytes.NewReader(src))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "## @") {
			continue
		}
		if m := sectionRe.FindStringSubmatch(line); m != nil {
			sections = append(sections, Section{Title: m[1]})
			continue
		}
		m := paramRe.FindStringSubmatch(line)
		if m == nil {
			return nil, fmt.Errorf("line %d: malformed annotation %q; want `## @param {type} path - description` or `## @section title`", n, line)
		}
		p, err := parseParam(m[1], m[2], m[3])
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		p.Line = n
		sec := current()
		p.Section = sec.Title
		sec.Params = append(sec.Params, p)
	}
	return sections, sc.Err()
}

func parseParam(typeSpec, path, desc string) (Param, error) {
	p := Param{Path: strings.Split(path, "."), Description: desc}
	for _, k := range p.Path {
		if !keyRe.MatchString(k) {
			return p, fmt.Errorf("param %q: bad key %q (letters, digits, _ and -; dots separate keys)", path, k)
		}
	}
	head, rest, _ := strings.Cut(typeSpec, ",")
	t, ok := typeAliases[strings.TrimSpace(head)]
	if !ok {
		return p, fmt.Errorf("param %q: unknown type %q", path, head)
	}
	p.Type = t
	if err := parseModifiers(&p, rest); err != nil {
		return p, fmt.Errorf("param %q: %w", path, err)
	}
	return p, checkModifiers(p)
}

// parseModifiers reads `key:value` pairs separated by commas. pattern: must come last and takes
// the rest of the braces verbatim, so a regular expression may contain commas.
func parseModifiers(p *Param, s string) error {
	for s != "" {
		var mod string
		if strings.HasPrefix(strings.TrimSpace(s), "pattern:") {
			mod, s = strings.TrimSpace(s), ""
		} else {
			mod, s, _ = strings.Cut(s, ",")
			mod = strings.TrimSpace(mod)
		}
		key, val, ok := strings.Cut(mod, ":")
		if !ok {
			return fmt.Errorf("modifier %q: want key:value", mod)
		}
		if err := setModifier(p, key, val); err != nil {
			return fmt.Errorf("modifier %q: %w", mod, err)
		}
	}
	return nil
}

func setModifier(p *Param, key, val string) error {
	switch key {
	case "enum":
		p.Enum = strings.Split(val, "|")
	case "min", "max":
		f, err := strconv.ParseFloat(val, 64)
		if err != nil {
			return err
		}
		if key == "min" {
			p.Min = &f
		} else {
			p.Max = &f
		}
	case "minLength", "maxLength":
		n, err := strconv.Atoi(val)
		if err != nil {
			return err
		}
		if key == "minLength" {
			p.MinLength = &n
		} else {
			p.MaxLength = &n
		}
	case "pattern":
		if _, err := regexp.Compile(val); err != nil {
			return err
		}
		p.Pattern = val
	case "items", "values":
		t, ok := typeAliases[val]
		if !ok || !scalarTypes[t] {
			return fmt.Errorf("%s must be one of string, integer, number, boolean, object", key)
		}
		if key == "items" {
			p.Items = t
		} else {
			p.Values = t
		}
	default:
		return fmt.Errorf("unknown modifier %q (enum, min, max, minLength, maxLength, pattern, items, values)", key)
	}
	return nil
}

// checkModifiers rejects modifiers that make no sense for the type, e.g. items on a string.
func checkModifiers(p Param) error {
	bad := func(what string) error {
		return fmt.Errorf("param %q: %s does not apply to type %s", p.Key(), what, p.Type)
	}
	numeric := p.Type == "integer" || p.Type == "number"
	switch {
	case (p.Min != nil || p.Max != nil) && !numeric:
		return bad("min/max")
	case (p.MinLength != nil || p.MaxLength != nil) && p.Type != "string":
		return bad("minLength/maxLength")
	// JSON Schema applies a pattern to strings only, so it also constrains the string form of an
	// int-or-string.
	case p.Pattern != "" && p.Type != "string" && p.Type != "int-or-string":
		return bad("pattern")
	case p.Items != "" && p.Type != "array":
		return bad("items")
	case p.Values != "" && p.Type != "object":
		return bad("values")
	case len(p.Enum) > 0 && !numeric && p.Type != "string":
		return bad("enum")
	}
	return nil
}
