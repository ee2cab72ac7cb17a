package provider

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"

	"github.com/virtual-kubelet/virtual-kubelet/node/api"

	"github.com/cozystack/etcd-operator/e2e/nodeagent/process"
)

// runWithPTY runs c on a new pseudo-terminal, copying the client's stdin/stdout and resizes.
func runWithPTY(c *exec.Cmd, attach api.AttachIO) error {
	master, slave, err := process.OpenPTY()
	if err != nil {
		return err
	}
	defer master.Close()
	c.Stdin, c.Stdout, c.Stderr = slave, slave, slave
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := c.Start(); err != nil {
		slave.Close()
		return err
	}
	slave.Close()
	go forwardResizes(master, attach.Resize())
	if in := attach.Stdin(); in != nil {
		go func() { _, _ = io.Copy(master, in) }()
	}
	if out := attach.Stdout(); out != nil {
		go func() { _, _ = io.Copy(out, master) }()
	}
	err = c.Wait()
	if ee, ok := err.(*exec.ExitError); ok {
		return fmt.Errorf("command terminated with exit code %d", ee.ExitCode())
	}
	return err
}

// forwardResizes applies the client's terminal sizes until the channel closes; reading it also
// keeps virtual-kubelet's sender from blocking.
func forwardResizes(master *os.File, sizes <-chan api.TermSize) {
	for size := range sizes {
		_ = process.SetWinsize(master, size.Width, size.Height)
	}
}
