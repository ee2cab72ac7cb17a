package ociimage

import (
	"debug/buildinfo"
	"debug/elf"
	"fmt"
	"runtime/debug"
	"strings"
)

// Module is this repository's Go module.
const Module = "github.com/cozystack/etcd-operator"

// CheckManagerBuild says whether the binary at path is the manager built as the Dockerfile
// builds it (ManagerBuildFlags, CGO_ENABLED=0, no build tags): `make images` packs such a
// binary from bin/ as it is, and builds one otherwise. It reads what Go recorded in the binary,
// and, for -ldflags=-s (which Go does not record with -trimpath), the absence of a symbol table.
func CheckManagerBuild(path string) error {
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		return err
	}
	f, err := elf.Open(path)
	if err != nil {
		return err
	}
	stripped := f.Section(".symtab") == nil
	_ = f.Close()
	if err := checkManagerBuild(info, stripped); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// checkManagerBuild is CheckManagerBuild on what Go recorded in the binary and whether its
// symbol table was stripped.
func checkManagerBuild(info *debug.BuildInfo, stripped bool) error {
	if want := Module + "/" + strings.TrimPrefix(ManagerPackage, "./"); info.Path != want {
		return fmt.Errorf("the binary of %s, not %s", info.Path, want)
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	want := map[string]string{"CGO_ENABLED": "0", "-tags": ""}
	for _, f := range ManagerBuildFlags {
		switch f {
		case "-trimpath":
			want[f] = "true"
		case "-ldflags=-s":
			if !stripped {
				return fmt.Errorf("a symbol table, which the Dockerfile's -ldflags=-s strips")
			}
		default:
			return fmt.Errorf("no way to tell whether it was built with %s", f)
		}
	}
	for key, value := range want {
		if settings[key] != value {
			return fmt.Errorf("built with %s=%q, the Dockerfile's manager with %q", key, settings[key], value)
		}
	}
	return nil
}
