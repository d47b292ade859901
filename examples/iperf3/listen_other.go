//go:build !linux

package main

import (
	"fmt"
	"runtime"
	"syscall"
)

// bindToDevice fails: SO_BINDTODEVICE is linux's.
func bindToDevice(string) func(network, address string, c syscall.RawConn) error {
	return func(string, string, syscall.RawConn) error {
		return fmt.Errorf("bind to device is not available on this platform (%s/%s)", runtime.GOOS, runtime.GOARCH)
	}
}
