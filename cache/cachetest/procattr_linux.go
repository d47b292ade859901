package cachetest

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the kernel kill the server when the process that
// started it dies without calling Close (a tool killed by SIGPIPE or SIGKILL),
// so that no server outlives its user.
//
// Caveat: Pdeathsig fires when the thread that forked the server exits, not
// only when the process does (Go issue 27505), and the Go runtime ends a
// thread when a goroutine locked to it with runtime.LockOSThread returns
// still locked. startAndWait therefore forks from a goroutine that holds
// its thread locked until the server exits, so that no other goroutine can
// end that thread early.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
