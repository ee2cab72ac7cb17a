package valuesschema

import (
	"reflect"
	"strings"
	"testing"
)

func ptr[T any](v T) *T { return &v }

func TestParseAnnotations(t *testing.T) {
	src := `# plain comments are ignored
## @section Storage
## @param {string,enum:|Memory} storage.medium - Where data lives.
## @param {quantity} storage.size - Size.
## @param {int,min:0,max:9} replicas - Members.
## @param {string,minLength:1,maxLength:8,pattern:^[a-z]{1,3}(,[a-z]+)?$} name - A name, with a comma in the pattern.
## @param {array,items:string} names - Names.
## @param {object,values:string} labels - Labels.
## @param {bool} on - A switch.
`
	sections, err := ParseAnnotations([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if len(sections) != 1 || sections[0].Title != "Storage" {
		t.Fatalf("sections = %+v", sections)
	}
	got := sections[0].Params
	want := []Param{
		{Path: []string{"storage", "medium"}, Type: "string", Enum: []string{"", "Memory"}, Description: "Where data lives.", Line: 3},
		{Path: []string{"storage", "size"}, Type: "quantity", Description: "Size.", Line: 4},
		{Path: []string{"replicas"}, Type: "integer", Min: ptr(0.0), Max: ptr(9.0), Description: "Members.", Line: 5},
		{Path: []string{"name"}, Type: "string", MinLength: ptr(1), MaxLength: ptr(8), Pattern: `^[a-z]{1,3}(,[a-z]+)?$`,
			Description: "A name, with a comma in the pattern.", Line: 6},
		{Path: []string{"names"}, Type: "array", Items: "string", Description: "Names.", Line: 7},
		{Path: []string{"labels"}, Type: "object", Values: "string", Description: "Labels.", Line: 8},
		{Path: []string{"on"}, Type: "boolean", Description: "A switch.", Line: 9},
	}
	for i := range want {
		want[i].Section = "Storage"
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("params:\n got %+v\nwant %+v", got, want)
	}
}

func TestParamsBeforeAnySectionGetADefaultSection(t *testing.T) {
	sections, err := ParseAnnotations([]byte("## @param {string} a - A.\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(sections) != 1 || sections[0].Title != "Parameters" || len(sections[0].Params) != 1 {
		t.Fatalf("sections = %+v", sections)
	}
}

func TestParseAnnotationErrors(t *testing.T) {
	cases := map[string]struct{ line, want string }{
		"no description":    {"## @param {string} a", "line 1: malformed annotation"},
		"unknown type":      {"## @param {text} a - A.", `unknown type "text"`},
		"bad key":           {"## @param {string} a..b - A.", `bad key ""`},
		"unknown modifier":  {"## @param {string,default:x} a - A.", `unknown modifier "default"`},
		"modifier no colon": {"## @param {string,nullable} a - A.", `want key:value`},
		"min on string":     {"## @param {string,min:1} a - A.", "min/max does not apply to type string"},
		"maxLength on int":  {"## @param {integer,maxLength:1} a - A.", "minLength/maxLength does not apply"},
		"pattern on int":    {"## @param {integer,pattern:^1$} a - A.", "pattern does not apply to type integer"},
		"items on object":   {"## @param {object,items:string} a - A.", "items does not apply to type object"},
		"enum on boolean":   {"## @param {boolean,enum:true} a - A.", "enum does not apply to type boolean"},
		"bad pattern":       {"## @param {string,pattern:([} a - A.", "missing closing"},
		"bad item type":     {"## @param {array,items:quantity} a - A.", "items must be one of"},
		"typo in tag":       {"## @parm {string} a - A.", "malformed annotation"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := ParseAnnotations([]byte(tc.line + "\n"))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}
