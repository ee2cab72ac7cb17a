package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestApplyDefaultsKeepsCommentsAndSetsLeaves(t *testing.T) {
	values := "## @section A\n## @param {boolean} a.on - On.\na:\n  on: false # why\n  list: []\n\n## @section B\nb: {}\n"
	got, set, err := applyDefaults([]byte(values), []byte("a:\n  on: true\n  list: [x]\nb:\n  k: v\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := "## @section A\n## @param {boolean} a.on - On.\na:\n  on: true # why\n  list: [x]\n\n## @section B\nb:\n  k: v\n"
	if string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if len(set) != 3 || strings.Join(set[0].path, ".") != "a.on" || set[0].value != true {
		t.Errorf("leaves set: %+v", set)
	}
	if _, _, err := applyDefaults([]byte(values), []byte("a: {typo: 1}\n")); err == nil || !strings.Contains(err.Error(), "a.typo") {
		t.Errorf("an override of a key the chart lacks: got %v, want an error naming a.typo", err)
	}
	if same, set, err := applyDefaults([]byte(values), nil); err != nil || string(same) != values || len(set) != 0 {
		t.Errorf("no overrides must leave the values as they are: %v %q", err, same)
	}
}

func TestWithDefaultsSetsSchemaDefaults(t *testing.T) {
	schema := `{"properties":{"a":{"type":"object","properties":{"on":{"type":"boolean","default":false}}}}}`
	out, err := withDefaults([]byte(schema), []override{{path: []string{"a", "on"}, value: true}})
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Properties struct {
			A struct {
				Properties struct {
					On struct{ Default any } `json:"on"`
				} `json:"properties"`
			} `json:"a"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(out, &s); err != nil || s.Properties.A.Properties.On.Default != true {
		t.Errorf("default not set: %v %s", err, out)
	}
	if _, err := withDefaults([]byte(schema), []override{{path: []string{"a", "off"}}}); err == nil {
		t.Error("an override the schema lacks must be an error")
	}
}

// A null in the defaults leaves the value out: of values.yaml with its @param lines (its fields'
// too), and of the schema, where its closed object then refuses it.
func TestApplyDefaultsNullRemovesAValue(t *testing.T) {
	values := "## @section A\n## @param {string} a.keep - Kept.\n## @param {string,pattern:^x{1}$} a.gone - Gone.\n" +
		"## @param {string} a.sub.x - Gone with sub.\n## @param {string} a.gonex - Kept: only a prefix of the name.\n" +
		"a:\n  keep: k\n  gone: g\n  sub:\n    x: \"\"\n  gonex: \"\"\n"
	got, set, err := applyDefaults([]byte(values), []byte("a:\n  gone: null\n  sub: ~\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := "## @section A\n## @param {string} a.keep - Kept.\n## @param {string} a.gonex - Kept: only a prefix of the name.\n" +
		"a:\n  keep: k\n  gonex: \"\"\n"
	if string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if len(set) != 2 || !set[0].remove || !set[1].remove {
		t.Fatalf("removals: %+v", set)
	}
	schema := `{"properties":{"a":{"type":"object","additionalProperties":false,"required":["gone","keep"],"default":{"gone":"g","keep":"k"},` +
		`"properties":{"keep":{"type":"string"},"gone":{"type":"string"},"sub":{"type":"object"},"gonex":{"type":"string"}}}}}`
	out, err := withDefaults([]byte(schema), set)
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Properties struct {
			A struct {
				Required   []string          `json:"required"`
				Default    map[string]string `json:"default"`
				Properties map[string]any    `json:"properties"`
			} `json:"a"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(out, &s); err != nil {
		t.Fatal(err)
	}
	a := s.Properties.A
	if len(a.Properties) != 2 || a.Properties["keep"] == nil || a.Properties["gonex"] == nil ||
		len(a.Required) != 1 || a.Required[0] != "keep" || len(a.Default) != 1 {
		t.Errorf("schema after removal: %s", out)
	}
	if _, _, err := applyDefaults([]byte(values), []byte("a: {typo: null}\n")); err == nil || !strings.Contains(err.Error(), "a.typo") {
		t.Errorf("removing a key the chart lacks: got %v, want an error naming a.typo", err)
	}
}
