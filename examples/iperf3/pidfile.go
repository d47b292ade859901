package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// anotherInstance is 3.21's refusal when the pid file names a live
// process.
type anotherInstance struct{}

func (anotherInstance) Error() string { return "Another instance of iperf3 appears to be running" }

// pidfileError is 3.21's IEPIDFILE.
type pidfileError struct{ err error }

func (e *pidfileError) Error() string { return "error - unable to write PID file: " + errnoText(e.err) }

// createPidfile writes this process's pid to path (no newline, mode 0600,
// as 3.21) unless the pid already there is a live process, and returns
// the function that removes the file at exit.
func createPidfile(path string) (remove func(), err error) {
	if b, err := os.ReadFile(path); err == nil {
		if pid, _ := strconv.Atoi(leadingInt(strings.TrimSpace(string(b)))); pid > 0 && alive(pid) {
			return nil, anotherInstance{}
		}
	}
	if err := os.WriteFile(path, []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		return nil, &pidfileError{err: err}
	}
	return func() { _ = os.Remove(path) }, nil
}

// alive is kill(pid, 0) == 0 (false on windows, where signal 0 is not
// available: the file is then taken over).
func alive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, os.ErrPermission)
}

// exitWith prints a start-up error as 3.21's iperf_errexit and returns 1.
func exitWith(errOut io.Writer, err error) int {
	fmt.Fprintf(errOut, "iperf3: %v\n", err)
	return 1
}
