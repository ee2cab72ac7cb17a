package network

import (
	"path/filepath"
	"testing"
)

func TestIPAMSkipsReservedAndPersists(t *testing.T) {
	file := filepath.Join(t.TempDir(), "ipam.json")
	m, err := NewIPAM("10.244.3.0/24", file)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"10.244.3.2", "10.244.3.3", "10.244.3.2"} {
		uid := []string{"a", "b", "a"}[i]
		got, err := m.Allocate(uid)
		if err != nil || got.String() != want {
			t.Fatalf("Allocate(%s) = %v, %v; want %s", uid, got, err, want)
		}
	}
	reloaded, err := NewIPAM("10.244.3.0/24", file)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := reloaded.Allocate("b"); got.String() != "10.244.3.3" {
		t.Fatalf("after reload b = %s", got)
	}
	if err := reloaded.Release("a"); err != nil {
		t.Fatal(err)
	}
	if got, _ := reloaded.Allocate("c"); got.String() != "10.244.3.4" {
		t.Fatalf("want round-robin .4 (not the just released .2), got %s", got)
	}
}

func TestIPAMWrapsAround(t *testing.T) {
	m, err := NewIPAM("10.244.3.0/29", filepath.Join(t.TempDir(), "ipam.json"))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 6; i++ { // .2-.7
		if _, err := m.Allocate(string(rune('a' + i))); err != nil {
			t.Fatal(err)
		}
	}
	_ = m.Release("b") // .3
	if got, err := m.Allocate("z"); err != nil || got.String() != "10.244.3.3" {
		t.Fatalf("after wrap-around got %s, %v", got, err)
	}
}

func TestIPAMExhaustion(t *testing.T) {
	m, err := NewIPAM("10.244.3.0/29", filepath.Join(t.TempDir(), "ipam.json"))
	if err != nil {
		t.Fatal(err)
	}
	// .0 and .1 are reserved: .2-.7 are six addresses.
	for i := 0; i < 6; i++ {
		if _, err := m.Allocate(string(rune('a' + i))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := m.Allocate("z"); err == nil {
		t.Fatal("want exhaustion error")
	}
}

func TestNamesFor(t *testing.T) {
	n := NamesFor("lc-x-p", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0")
	if n.Netns != "lc-x-p0f1e2d3c4b5a" || n.Veth != "v0f1e2d3c4b5a" {
		t.Fatalf("got %+v", n)
	}
}

func TestIPAMRetain(t *testing.T) {
	m, err := NewIPAM("10.244.3.0/24", filepath.Join(t.TempDir(), "ipam.json"))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := m.Allocate("a")
	_, _ = m.Allocate("b")
	m.Retain(map[string]bool{"a": true})
	if got, _ := m.Allocate("a"); got != a {
		t.Fatalf("retained address changed: %s -> %s", a, got)
	}
	if len(m.byUID) != 1 {
		t.Fatalf("b was not released: %v", m.byUID)
	}
}
