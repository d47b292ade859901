package latencytest

import (
	"encoding/binary"
	"net"
	"sync"
	"time"
)

// impairedConn is a server's net.PacketConn whose replies Config.Impair
// drops or holds back.
type impairedConn struct {
	net.PacketConn
	impair func(seq uint64) (time.Duration, bool)

	mu     sync.Mutex
	closed bool
	done   chan struct{} // closed by Close: held-back replies are dropped
	held   sync.WaitGroup
}

func newImpairedConn(pc net.PacketConn, impair func(uint64) (time.Duration, bool)) *impairedConn {
	return &impairedConn{PacketConn: pc, impair: impair, done: make(chan struct{})}
}

// WriteTo sends, drops or holds back one reply, by the sequence number at
// the start of its sockperf header (big endian).
func (c *impairedConn) WriteTo(b []byte, addr net.Addr) (int, error) {
	if len(b) < 8 {
		return c.PacketConn.WriteTo(b, addr)
	}
	delay, drop := c.impair(binary.BigEndian.Uint64(b))
	switch {
	case drop:
		return len(b), nil
	case delay <= 0:
		return c.PacketConn.WriteTo(b, addr)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, net.ErrClosed
	}
	msg := append([]byte(nil), b...)
	c.held.Go(func() {
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-t.C:
			_, _ = c.PacketConn.WriteTo(msg, addr)
		case <-c.done:
		}
	})
	return len(b), nil
}

// Close closes the connection after dropping the replies still held back.
func (c *impairedConn) Close() error {
	c.mu.Lock()
	if !c.closed {
		c.closed = true
		close(c.done)
	}
	c.mu.Unlock()
	c.held.Wait()
	return c.PacketConn.Close()
}
