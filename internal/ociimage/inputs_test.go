package ociimage

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestInputsKey(t *testing.T) {
	host := fakeHost(t)
	manager := writeHostFile(t, filepath.Join(t.TempDir(), "manager"), "fake manager", 0o755)
	key := func(ref string, salt string) string {
		t.Helper()
		s, err := OperatorSpec(ref, manager, host)
		if err != nil {
			t.Fatal(err)
		}
		k, err := InputsKey(s, []byte(salt))
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	first := key("example.com/operator:1", "builder")
	touch(t, manager, time.Hour) // as go build leaves an unchanged binary
	if again := key("example.com/operator:1", "builder"); again != first {
		t.Fatalf("the same inputs gave keys %s and %s", first, again)
	}
	base := func() string { return key("example.com/operator:1", "builder") }
	for _, c := range []struct {
		name   string
		change func() string
	}{
		{"another name", func() string { return key("example.com/operator:2", "builder") }},
		{"another builder", func() string { return key("example.com/operator:1", "builder 2") }},
		{"another binary", func() string {
			writeHostFile(t, manager, "fake manager 2", 0o755)
			return base()
		}},
		{"a new time zone", func() string {
			writeHostFile(t, filepath.Join(host.ZoneInfo, "Asia", "Tokyo"), "TZif Tokyo", 0o644)
			return base()
		}},
		{"new certificates", func() string {
			writeHostFile(t, host.CACertificates, "MORE CERTIFICATES", 0o644)
			return base()
		}},
	} {
		before := base()
		if after := c.change(); after == before {
			t.Errorf("%s: the key did not change", c.name)
		}
	}
}

func touch(t *testing.T, path string, by time.Duration) {
	t.Helper()
	when := time.Now().Add(by)
	if err := os.Chtimes(path, when, when); err != nil {
		t.Fatal(err)
	}
}
