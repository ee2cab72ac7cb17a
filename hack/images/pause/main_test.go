package main

import (
	"bufio"
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// asPause makes this test binary run main, for the tests that start it as the pause program.
const asPause = "PAUSE_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asPause) == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

func TestPauseExitsZeroOnSignal(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), asPause+"=1")
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			lines := bufio.NewScanner(stderr)
			if !lines.Scan() || lines.Text() != notFirst {
				_ = cmd.Process.Kill()
				t.Fatalf("first line %q, want %q (printed once the signal handler is in place)", lines.Text(), notFirst)
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			for lines.Scan() {
			}
			if err := cmd.Wait(); err != nil {
				t.Fatalf("pause after %v: %v, want exit status 0 (not killed by the signal)", sig, err)
			}
		})
	}
}
