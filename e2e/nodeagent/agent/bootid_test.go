package agent

import "testing"

// A boot ID lasts across agent restarts (a crash keeps the pods and their memory) and changes
// only after the boot was ended (the pods were stopped: a machine going down).
func TestBootID(t *testing.T) {
	dir := t.TempDir()
	first, err := loadBootID(dir)
	if err != nil || first == "" {
		t.Fatalf("first boot: %q, %v", first, err)
	}
	if again, err := loadBootID(dir); err != nil || again != first {
		t.Fatalf("restart without ending the boot: %q, %v; want %q", again, err, first)
	}
	if err := endBoot(dir); err != nil {
		t.Fatal(err)
	}
	if next, err := loadBootID(dir); err != nil || next == first || next == "" {
		t.Fatalf("after the boot ended: %q, %v; want a new ID", next, err)
	}
	if err := endBoot(t.TempDir()); err != nil {
		t.Errorf("ending a boot never started: %v", err)
	}
}
