//go:build !linux && !darwin

package main

import "runtime"

// systemInfo names the system where uname is not available.
func systemInfo() string { return runtime.GOOS + " " + runtime.GOARCH }
