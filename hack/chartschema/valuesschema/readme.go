package valuesschema

import (
	"encoding/json"
	"fmt"
	"strings"
)

// The README table lives between these markers; everything outside them is hand-written.
const (
	BeginMarker = "<!-- chartschema:parameters:begin -->"
	EndMarker   = "<!-- chartschema:parameters:end -->"
)

// ParamTable renders one Markdown table per section, in values.yaml order.
func ParamTable(sections []Section, values map[string]any) (string, error) {
	var b strings.Builder
	for _, s := range sections {
		if len(s.Params) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n### %s\n\n| Name | Type | Description | Default |\n|---|---|---|---|\n", s.Title)
		for _, p := range s.Params {
			def, err := defaultCell(values, p.Path)
			if err != nil {
				return "", fmt.Errorf("line %d: %w", p.Line, err)
			}
			if hasFields(sections, p) {
				def = ""
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", p.Key(), typeCell(p), cell(p.Description), def)
		}
	}
	return b.String(), nil
}

// hasFields tells whether params are declared below p; p's default is then theirs, listed below.
func hasFields(sections []Section, p Param) bool {
	for _, s := range sections {
		for _, q := range s.Params {
			if strings.HasPrefix(q.Key(), p.Key()+".") {
				return true
			}
		}
	}
	return false
}

func typeCell(p Param) string {
	t := "`" + p.Type + "`"
	switch {
	case p.Items != "":
		t = "`array of " + p.Items + "`"
	case p.Values != "":
		t = "`map of " + p.Values + "`"
	}
	if len(p.Enum) > 0 {
		vals := make([]string, len(p.Enum))
		for i, e := range p.Enum {
			if p.Type == "string" {
				e = fmt.Sprintf("%q", e)
			}
			vals[i] = "`" + cell(e) + "`"
		}
		t += " (" + strings.Join(vals, ", ") + ")"
	}
	return t
}

// defaultCell is the value from values.yaml as compact JSON; objects declared field by field
// show no default (their fields carry it).
func defaultCell(values map[string]any, path []string) (string, error) {
	v, ok := lookup(values, path)
	if !ok {
		return "", fmt.Errorf("%s is declared but missing from values.yaml", strings.Join(path, "."))
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	return "`" + cell(string(raw)) + "`", nil
}

func lookup(values map[string]any, path []string) (any, bool) {
	var cur any = values
	for _, k := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[k]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// cell escapes what would break a Markdown table row.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

// ReplaceTable puts table between the markers of a README; both markers must be present, in
// order, so a README without them is an error rather than silently left stale.
func ReplaceTable(readme, table string) (string, error) {
	begin := strings.Index(readme, BeginMarker)
	end := strings.Index(readme, EndMarker)
	if begin < 0 || end < 0 || end < begin {
		return "", fmt.Errorf("README needs %s and %s, in that order", BeginMarker, EndMarker)
	}
	return readme[:begin+len(BeginMarker)] + "\n" + table + "\n" + readme[end:], nil
}
