//go:build linux || darwin

package main

import (
	"os"
	"os/exec"
	"syscall"
)

// daemonEnv marks the re-executed server: it must not daemonize again.
const daemonEnv = "NETPERFKIT_IPERF3_DAEMON"

// daemonize is 3.21's daemon(1, 0) for a Go program, which cannot fork:
// it starts this executable again with the same arguments in a new
// session, in the same directory, with stdin, stdout and stderr on
// /dev/null (--logfile still applies in the child), and returns once the
// child has started.
func daemonize(args []string) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(exe, args[1:]...)
	cmd.Env = append(os.Environ(), daemonEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	return cmd.Process.Release()
}
