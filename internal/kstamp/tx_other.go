//go:build !linux

package kstamp

import (
	"errors"
	"fmt"
	"net"
	"runtime"
	"time"
)

// TX is linux-only; EnableTX returns an error elsewhere.
type TX struct{}

// ErrTXUnsupported is wrapped by EnableTX's error: transmit timestamps
// are linux-only.
var ErrTXUnsupported = errors.New("kstamp: no transmit timestamps")

// EnableTX returns an error wrapping ErrTXUnsupported.
func EnableTX(net.Conn) (*TX, error) {
	return nil, fmt.Errorf("%w on %s", ErrTXUnsupported, runtime.GOOS)
}

// Sent is never called: EnableTX returns no TX.
func (t *TX) Sent(int) uint32 { return 0 }

// Take finds nothing.
func (t *TX) Take(uint32) (time.Time, bool) { return time.Time{}, false }

// Drain does nothing.
func (t *TX) Drain() {}

// Collect does nothing.
func (t *TX) Collect(uint32) {}

// Lost is zero.
func (t *TX) Lost() int64 { return 0 }

// Taken is zero.
func (t *TX) Taken() int64 { return 0 }

// KeysFromFirstByte is false.
func (t *TX) KeysFromFirstByte() bool { return false }

// EnablePerSend returns an error wrapping ErrTXUnsupported.
func EnablePerSend(net.Conn) (*TX, error) {
	return nil, fmt.Errorf("%w on %s", ErrTXUnsupported, runtime.GOOS)
}

// Write is never called: EnablePerSend returns no TX.
func (t *TX) Write([]byte, bool) (int, uint32, error) { return 0, 0, ErrTXUnsupported }
