//go:build linux

package ethtool

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// opError is the error of the ioctl operations of a Client. It names the
// operation and the interface, and errors.Is maps it onto the os errors, as
// the Client's documentation says: os.ErrNotExist for a missing interface
// (ENODEV, ErrNoInterface), a driver that does not implement the operation
// (EOPNOTSUPP) and an interface without statistics (ErrNoStats);
// os.ErrPermission for EPERM and EACCES. The cause (a syscall.Errno,
// ErrNoStats or ErrNoInterface) is unwrapped.
type opError struct {
	op    string // the ethtool command, for example "GSTATS"
	iface string
	err   error
}

func (e *opError) Error() string {
	switch {
	case errors.Is(e.err, ErrNoInterface) && e.iface == "":
		return "ethtool: no interface named: the interface name is empty"
	case errors.Is(e.err, ErrNoInterface) && len(e.iface) >= unix.IFNAMSIZ:
		return fmt.Sprintf("ethtool: %q: no such network interface (a name has at most %d bytes)", e.iface, unix.IFNAMSIZ-1)
	case errors.Is(e.err, ErrNoInterface):
		return fmt.Sprintf("ethtool: %s: no such network interface", e.iface)
	case errors.Is(e.err, ErrNoStats):
		return fmt.Sprintf("ethtool: %s: interface has no driver statistics", e.iface)
	}
	return fmt.Sprintf("ethtool: %s %s: %v", e.op, e.iface, e.err)
}

// Unwrap returns the cause.
func (e *opError) Unwrap() error { return e.err }

// Is lets errors.Is match os.ErrNotExist and os.ErrPermission.
func (e *opError) Is(target error) bool {
	switch target {
	case os.ErrNotExist:
		return errors.Is(e.err, os.ErrNotExist) || errors.Is(e.err, syscall.ENODEV) || errors.Is(e.err, syscall.EOPNOTSUPP)
	case os.ErrPermission:
		return errors.Is(e.err, syscall.EPERM) || errors.Is(e.err, syscall.EACCES)
	}
	return false
}
