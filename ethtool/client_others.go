//go:build !linux

package ethtool

import (
	"errors"
	"fmt"
	"runtime"
)

type client struct{}

func newClient() (*client, error)                     { return nil, errUnsupported() }
func (*client) close() error                          { return errUnsupported() }
func (*client) stats(string, Stats) (Stats, error)    { return nil, errUnsupported() }
func (*client) driverInfo(string) (driverInfo, error) { return driverInfo{}, errUnsupported() }
func (*client) ringParams(string) (RingParams, error) { return RingParams{}, errUnsupported() }

func errUnsupported() error {
	return fmt.Errorf("ethtool: not supported on %s/%s: %w", runtime.GOOS, runtime.GOARCH, errors.ErrUnsupported)
}
