//go:build !linux && !darwin

package main

import (
	"fmt"
	"runtime"
)

const daemonEnv = "NETPERFKIT_IPERF3_DAEMON"

// daemonize is not available: there is no session to detach from here.
func daemonize([]string) error {
	return fmt.Errorf("not available on this platform (%s/%s)", runtime.GOOS, runtime.GOARCH)
}
