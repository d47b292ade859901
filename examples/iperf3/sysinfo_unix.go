//go:build linux || darwin

package main

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// systemInfo is 3.21's get_system_info(): uname's sysname, nodename,
// release, version and machine.
func systemInfo() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return runtime.GOOS + " " + runtime.GOARCH
	}
	return unix.ByteSliceToString(u.Sysname[:]) + " " + unix.ByteSliceToString(u.Nodename[:]) + " " +
		unix.ByteSliceToString(u.Release[:]) + " " + unix.ByteSliceToString(u.Version[:]) + " " +
		unix.ByteSliceToString(u.Machine[:])
}
