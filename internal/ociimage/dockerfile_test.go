package ociimage

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cozystack/etcd-operator/internal/testenv"
)

// instruction is one Dockerfile instruction: its keyword (upper case), flags (--from=…) and
// the rest of its line (continuations joined).
type instruction struct {
	keyword string
	flags   []string
	args    string
}

// stage is a FROM and what follows it.
type stage struct {
	from, name string
	body       []instruction
}

// parseDockerfile splits a Dockerfile into stages, enough for the instructions ours uses;
// it fails on anything it does not understand rather than guess.
func parseDockerfile(t *testing.T, text string) []stage {
	t.Helper()
	var stages []stage
	var line string
	for _, raw := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(raw)
		if line == "" && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if cont, ok := strings.CutSuffix(trimmed, `\`); ok {
			line += cont + " "
			continue
		}
		line += trimmed
		keyword, rest, _ := strings.Cut(line, " ")
		line = ""
		in := instruction{keyword: strings.ToUpper(keyword)}
		fields := strings.Fields(rest)
		for len(fields) > 0 && strings.HasPrefix(fields[0], "--") {
			in.flags, fields = append(in.flags, fields[0]), fields[1:]
		}
		in.args = strings.Join(fields, " ")
		if in.keyword == "FROM" {
			st := stage{from: fields[0]}
			if len(fields) == 3 && strings.EqualFold(fields[1], "AS") {
				st.name = fields[2]
			} else if len(fields) != 1 {
				t.Fatalf("Dockerfile: cannot read FROM %s", in.args)
			}
			stages = append(stages, st)
			continue
		}
		if len(stages) == 0 {
			t.Fatalf("Dockerfile: %s before any FROM", in.keyword)
		}
		stages[len(stages)-1].body = append(stages[len(stages)-1].body, in)
	}
	return stages
}

// TestDockerfileDescribesTheOperatorImage: the release image (Dockerfile) and the image `make
// images` writes (OperatorSpec) have the same base, binary (built alike), files, user and
// entrypoint. Whichever side changes alone fails this test.
func TestDockerfileDescribesTheOperatorImage(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	stages := parseDockerfile(t, string(raw))
	if len(stages) < 2 {
		t.Fatalf("Dockerfile has %d stages, want a build stage and the image", len(stages))
	}
	final := stages[len(stages)-1]
	if final.from != DistrolessBase {
		t.Errorf("the image is FROM %s; BaseLayer reproduces %s", final.from, DistrolessBase)
	}
	s, err := OperatorSpec("example.com/operator:1", "/host/manager", fakeHost(t))
	if err != nil {
		t.Fatal(err)
	}
	var copied []string
	for _, in := range final.body {
		switch in.keyword {
		case "USER":
			if in.args != s.Config.User {
				t.Errorf("Dockerfile USER %s, the spec's user %s", in.args, s.Config.User)
			}
		case "ENTRYPOINT":
			var entrypoint []string
			if err := json.Unmarshal([]byte(in.args), &entrypoint); err != nil {
				t.Fatalf("ENTRYPOINT %s is not in exec (JSON) form: %v", in.args, err)
			}
			if !slices.Equal(entrypoint, s.Config.Entrypoint) {
				t.Errorf("Dockerfile ENTRYPOINT %q, the spec's %q", entrypoint, s.Config.Entrypoint)
			}
		case "COPY":
			copied = append(copied, checkCopy(t, in, stages))
		default:
			t.Errorf("the image's stage has %s %s, which OperatorSpec does not reproduce", in.keyword, in.args)
		}
	}
	var files []string
	for _, l := range s.Layers[1:] { // the first is the base
		for _, e := range l.Entries {
			files = append(files, e.Path)
		}
	}
	slices.Sort(copied)
	slices.Sort(files)
	if !slices.Equal(copied, files) {
		t.Errorf("the Dockerfile copies %q onto the base, the spec adds %q", copied, files)
	}
}

// checkCopy checks a COPY --from=<stage> <out> <dest> against that stage's go build of the
// manager, and returns the destination.
func checkCopy(t *testing.T, in instruction, stages []stage) string {
	t.Helper()
	fields := strings.Fields(in.args)
	if len(in.flags) != 1 || !strings.HasPrefix(in.flags[0], "--from=") || len(fields) != 2 {
		t.Fatalf("COPY %v %s: want COPY --from=<build stage> <binary> <destination>", in.flags, in.args)
	}
	from := strings.TrimPrefix(in.flags[0], "--from=")
	for _, st := range stages {
		if st.name != from {
			continue
		}
		for _, run := range st.body {
			if run.keyword == "RUN" && strings.Contains(run.args, "go build") {
				want := "CGO_ENABLED=0 go build " + strings.Join(ManagerBuildFlags, " ") + " -o " + fields[0] + " " + ManagerPackage
				if run.args != want {
					t.Errorf("stage %s runs %q; `make images` builds the manager as %q", from, run.args, want)
				}
				return fields[1]
			}
		}
	}
	t.Fatalf("COPY --from=%s: no stage %s with a go build", from, from)
	return ""
}
