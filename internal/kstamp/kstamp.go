// Package kstamp reads a socket outside Go's netpoller, on a thread that
// sleeps in the kernel, and takes each read's arrival time from the kernel
// (SO_TIMESTAMPNS), so that a latency measurement can tell the network's and
// the server's time from its own wake-up. latency and cache use it for their
// open-loop clients.
package kstamp

import "time"

// pollSlice bounds each poll(2): a read notices its connection's deadline
// and closing within it.
const pollSlice = 10 * time.Millisecond
