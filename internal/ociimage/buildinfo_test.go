package ociimage

import (
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

func TestCheckManagerBuild(t *testing.T) {
	manager := Module + "/operator/cmd/manager"
	dockerfiles := []debug.BuildSetting{{Key: "-buildmode", Value: "exe"},
		{Key: "-trimpath", Value: "true"}, {Key: "CGO_ENABLED", Value: "0"}, {Key: "GOOS", Value: "linux"}}
	replace := func(key, value string) []debug.BuildSetting {
		out := []debug.BuildSetting{}
		for _, s := range dockerfiles {
			if s.Key != key {
				out = append(out, s)
			}
		}
		if value != "" {
			out = append(out, debug.BuildSetting{Key: key, Value: value})
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		path     string
		set      []debug.BuildSetting
		stripped bool
		refusal  string
	}{
		{"as the Dockerfile builds it", manager, dockerfiles, true, ""},
		{"another program", Module + "/hack/images/pause", dockerfiles, true, "the binary of " + Module + "/hack/images/pause"},
		{"not stripped", manager, dockerfiles, false, "a symbol table"},
		{"paths kept", manager, replace("-trimpath", ""), true, `-trimpath=""`},
		{"cgo", manager, replace("CGO_ENABLED", "1"), true, `CGO_ENABLED="1"`},
		{"the crash-point build", manager, replace("-tags", "crashpoint"), true, `-tags="crashpoint"`},
	} {
		err := checkManagerBuild(&debug.BuildInfo{Path: tc.path, Settings: tc.set}, tc.stripped)
		switch {
		case tc.refusal == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.refusal != "" && (err == nil || !strings.Contains(err.Error(), tc.refusal)):
			t.Errorf("%s: error %v, want one saying %s", tc.name, err, tc.refusal)
		}
	}
	if err := CheckManagerBuild(filepath.Join(t.TempDir(), "none")); err == nil {
		t.Error("a missing binary: no error")
	}
}
