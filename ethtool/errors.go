package ethtool

import (
	"fmt"
	"os"
)

// ErrNoStats reports that an interface exposes no driver statistics (lo,
// bridges, tun devices...) or that a text holds none. Errors wrapping it also
// match os.ErrNotExist.
var ErrNoStats error = notExistError("no statistics")

// ErrNoInterface reports that the named interface does not exist in the
// network namespace of the Client. Errors wrapping it also match
// os.ErrNotExist.
var ErrNoInterface error = notExistError("no such network interface")

// errClosed is what a Client's reads return after Close.
var errClosed error = closedError{}

// closedError is errClosed's type: errors.Is matches it to os.ErrClosed.
type closedError struct{}

func (closedError) Error() string        { return "ethtool: client is closed" }
func (closedError) Is(target error) bool { return target == os.ErrClosed }

// notExistError is a sentinel that errors.Is also matches to os.ErrNotExist.
type notExistError string

func (e notExistError) Error() string        { return string(e) }
func (e notExistError) Is(target error) bool { return target == os.ErrNotExist }

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
