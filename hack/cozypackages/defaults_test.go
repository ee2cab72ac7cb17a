package main

import (
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

// A null in the defaults leaves the value out: of values.yaml with its @param lines (its fields'
// too), so the schema built from the package's values.yaml leaves it out and its closed object
// refuses it.
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
	if _, _, err := applyDefaults([]byte(values), []byte("a: {typo: null}\n")); err == nil || !strings.Contains(err.Error(), "a.typo") {
		t.Errorf("removing a key the chart lacks: got %v, want an error naming a.typo", err)
	}
}

// The package's own values come first, and one the chart still has is refused.
func TestWithOwnValues(t *testing.T) {
	chart := "## @section A\n## @param {string} a - A.\na: x\n"
	got, err := withOwnValues([]byte(chart), []byte("## @section Own\n## @param {string} own - Own.\nown: y\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "## @section Own\n## @param {string} own - Own.\nown: y\n\n" + chart; string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if _, err := withOwnValues([]byte(chart), []byte("a: z\n")); err == nil || !strings.Contains(err.Error(), "a is a value of charts/etcd") {
		t.Errorf("a value both have: got %v", err)
	}
}
