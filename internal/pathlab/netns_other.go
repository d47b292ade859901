//go:build !linux

package pathlab

import (
	"fmt"
	"runtime"
)

// Do needs linux; New has skipped any test that gets here.
func (h *Host) Do(func() error) error {
	return fmt.Errorf("pathlab: network namespaces are not available on %s", runtime.GOOS)
}
