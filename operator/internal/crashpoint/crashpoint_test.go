package crashpoint

import (
	"os"
	"os/exec"
	"testing"
)

func TestAllNamesUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range All {
		if p.Name == "" || p.Operation == "" {
			t.Errorf("incomplete point %+v", p)
		}
		if seen[p.Name] {
			t.Errorf("crash point %q listed twice", p.Name)
		}
		seen[p.Name] = true
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Spec
		bad  bool
	}{
		{in: "", want: Spec{}},
		{in: LearnerAdded, want: Spec{Name: LearnerAdded, Nth: 1}},
		{in: LearnerAdded + ":3", want: Spec{Name: LearnerAdded, Nth: 3}},
		{in: LearnerAdded + ":0", bad: true},
		{in: LearnerAdded + ":x", bad: true},
		{in: "scaleup/learner-add", bad: true},
	} {
		got, err := Parse(tc.in)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v, error %v", tc.in, got, err, tc.want, tc.bad)
		}
		if err == nil && got.String() != tc.in {
			t.Errorf("Parse(%q).String() = %q", tc.in, got.String())
		}
	}
}

func TestTriggerFiresOnceAtTheNthHitOfItsName(t *testing.T) {
	tr := NewTrigger(Spec{Name: Promoted, Nth: 2})
	var fired []int
	for i, name := range []string{Promoted, LearnerAdded, Promoted, Promoted} {
		if tr.Fire(name) {
			fired = append(fired, i)
		}
	}
	if len(fired) != 1 || fired[0] != 2 {
		t.Errorf("fired at hits %v, want only at index 2 (the second %s)", fired, Promoted)
	}
	if NewTrigger(Spec{}).Fire(Promoted) {
		t.Error("a zero Spec fired")
	}
}

// TestHitReturnsWhenArmedWithoutTheTag: a normal build ignores EnvVar. The check runs in a
// child process so that a build that does crash cannot take the test binary with it.
func TestHitReturnsWhenArmedWithoutTheTag(t *testing.T) {
	if os.Getenv("CRASHPOINT_CHILD") == "1" {
		for _, p := range All {
			Hit(p.Name)
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHitReturnsWhenArmedWithoutTheTag$")
	cmd.Env = append(os.Environ(), "CRASHPOINT_CHILD=1", EnvVar+"="+SeedCreated)
	out, err := cmd.CombinedOutput()
	switch {
	case Enabled && err == nil:
		t.Errorf("a crashpoint build armed at %s survived its hit:\n%s", SeedCreated, out)
	case Enabled:
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != ExitCode {
			t.Errorf("a crashpoint build exited with %v, want code %d:\n%s", err, ExitCode, out)
		}
	case err != nil:
		t.Errorf("a normal build armed at %s stopped: %v\n%s", SeedCreated, err, out)
	}
}
