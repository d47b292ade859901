package ethtool

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// ErrNoStats reports that an interface exposes no driver statistics (lo,
// bridges, tun devices...) or that a text holds none. Errors wrapping it also
// match os.ErrNotExist.
var ErrNoStats error = notExistError("no statistics")

// ErrNoInterface reports that the named interface does not exist in the
// network namespace of the Client. Errors wrapping it also match
// os.ErrNotExist.
var ErrNoInterface error = notExistError("no such network interface")

// notExistError is a sentinel that errors.Is also matches to os.ErrNotExist.
type notExistError string

func (e notExistError) Error() string        { return string(e) }
func (e notExistError) Is(target error) bool { return target == os.ErrNotExist }

// Error is the error returned by the ioctl operations of a Client. It names
// the operation and the interface. errors.Is maps it onto the os errors:
// os.ErrNotExist for a missing interface (ENODEV, ErrNoInterface), a driver
// that does not implement the operation (EOPNOTSUPP) and an interface without
// statistics (ErrNoStats); os.ErrPermission for EPERM and EACCES.
type Error struct {
	// Op is the ethtool command, for example "GSTATS".
	Op string
	// Interface is the interface name the operation was for.
	Interface string
	// Err is the cause: a syscall.Errno, ErrNoStats or ErrNoInterface.
	Err error
}

func (e *Error) Error() string {
	switch {
	case errors.Is(e.Err, ErrNoInterface):
		return fmt.Sprintf("ethtool: %s: no such network interface", e.Interface)
	case errors.Is(e.Err, ErrNoStats):
		return fmt.Sprintf("ethtool: %s: interface has no driver statistics", e.Interface)
	}
	return fmt.Sprintf("ethtool: %s %s: %v", e.Op, e.Interface, e.Err)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is lets errors.Is match os.ErrNotExist and os.ErrPermission as described on
// Error.
func (e *Error) Is(target error) bool {
	switch target {
	case os.ErrNotExist:
		return errors.Is(e.Err, os.ErrNotExist) || errors.Is(e.Err, syscall.ENODEV) || errors.Is(e.Err, syscall.EOPNOTSUPP)
	case os.ErrPermission:
		return errors.Is(e.Err, syscall.EPERM) || errors.Is(e.Err, syscall.EACCES)
	}
	return false
}

// parseError reports a line of `ethtool -S` text that is not a statistic.
type parseError struct {
	// Line is the 1-based line number in the input.
	Line int
	// Text is the offending line, cut to 64 bytes.
	Text string
	// Reason says what is wrong with it.
	Reason string
}

func (e *parseError) Error() string {
	return fmt.Sprintf("ethtool: line %d: %s: %q", e.Line, e.Reason, e.Text)
}
