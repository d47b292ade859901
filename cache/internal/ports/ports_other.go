//go:build !linux

package ports

import (
	"errors"
	"fmt"
	"runtime"
)

// Read is not supported outside linux.
func Read(*Endpoint) (*Snapshot, error) {
	return nil, fmt.Errorf("ports: not supported on %s: %w", runtime.GOOS, errors.ErrUnsupported)
}
