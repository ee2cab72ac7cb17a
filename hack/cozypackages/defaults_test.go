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
