package cachetest

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the kernel kill the server when the process that
// started it dies without calling Close (a tool killed by SIGPIPE or SIGKILL),
// so that no server outlives its user.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
