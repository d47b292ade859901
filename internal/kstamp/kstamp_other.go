//go:build !linux

package kstamp

import (
	"net"
	"time"
)

// Reader is linux-only; New returns false elsewhere.
type Reader struct {
	// Spin and Netpoller are as on linux.
	Spin      time.Duration
	Netpoller bool
	TX        *TX
}

// New returns false: kernel-stamped reads are linux-only.
func New(net.Conn) (*Reader, bool) { return nil, false }

// EnableBlock is never called: New returns no Reader.
func (r *Reader) EnableBlock() error { return nil }

// SetDeadline is never called: New returns no Reader.
func (r *Reader) SetDeadline(time.Time) {}

// Read is never called: New returns no Reader.
func (r *Reader) Read([]byte) (int, error) { return 0, nil }

// Send is never called: New returns no Reader.
func (r *Reader) Send([]byte, bool, *time.Time) (uint32, error) { return 0, nil }

// Arrived is the zero time.
func (r *Reader) Arrived() time.Time { return time.Time{} }

// Stamped is the zero time and false.
func (r *Reader) Stamped() (time.Time, bool) { return time.Time{}, false }
