package provider

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"

	"github.com/virtual-kubelet/virtual-kubelet/node/api"
	"golang.org/x/sys/unix"
)

// runWithPTY runs c on a new pseudo-terminal, copying the client's stdin/stdout and resizes.
func runWithPTY(c *exec.Cmd, attach api.AttachIO) error {
	master, slave, err := openPTY()
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
	go func() {
		for size := range attach.Resize() {
			_ = unix.IoctlSetWinsize(int(master.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: size.Height, Col: size.Width})
		}
	}()
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

// openPTY opens a master/slave pseudo-terminal pair through /dev/ptmx.
func openPTY() (*os.File, *os.File, error) {
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	fd := int(master.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		master.Close()
		return nil, nil, fmt.Errorf("unlockpt: %w", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		master.Close()
		return nil, nil, fmt.Errorf("ptsname: %w", err)
	}
	slave, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		master.Close()
		return nil, nil, err
	}
	return master, slave, nil
}
