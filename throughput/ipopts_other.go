//go:build !linux

package throughput

import "time"

const (
	dontFragmentAvailable = false
	userTimeoutAvailable  = false
	bindDeviceAvailable   = false
)

func setBindToDevice(uintptr, string) error { return ErrNotAvailable }

func setDontFragment(uintptr) error               { return ErrNotAvailable }
func setUserTimeout(uintptr, time.Duration) error { return ErrNotAvailable }
func tcpMSS(uintptr) int                          { return 0 }
