//go:build !linux

package ethtooltest

import (
	"errors"
	"fmt"
	"runtime"
)

// InNetns needs linux; elsewhere it returns an error matching
// errors.ErrUnsupported.
func InNetns(path string, fn func() error) error {
	return fmt.Errorf("ethtooltest: network namespaces need linux, not %s: %w", runtime.GOOS, errors.ErrUnsupported)
}
