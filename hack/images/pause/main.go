// Command pause is the sandbox image's program: it holds a Pod's namespaces by doing nothing
// until the runtime stops it (SIGINT or SIGTERM: exit 0), and reaps the zombies it inherits
// as PID 1 of a Pod that shares its process namespace.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// notFirst is the warning of a pause that is not PID 1 (it then reaps nothing of the Pod's).
const notFirst = "warning: pause should be the first process"

func main() {
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	// After Notify: whoever reads this line may signal us.
	if os.Getpid() != 1 {
		fmt.Fprintln(os.Stderr, notFirst)
	}
	for s := range signals {
		if s != syscall.SIGCHLD {
			fmt.Fprintf(os.Stderr, "shutting down, got signal %v\n", s)
			os.Exit(0)
		}
		reap()
	}
}

// reap waits for every child that has exited, without blocking.
func reap() {
	for {
		pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
