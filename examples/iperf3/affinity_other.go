//go:build !linux

package main

import (
	"fmt"
	"runtime"
)

// setAffinity is not available: the process runs where the OS puts it.
func setAffinity(int) error {
	return fmt.Errorf("not available on this platform (%s/%s)", runtime.GOOS, runtime.GOARCH)
}
