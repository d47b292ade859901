//go:build !linux

package latency

import (
	"fmt"
	"net"
	"time"

	wire "github.com/netperfkit/netperfkit/internal/sockperfwire"
)

// netTransport uses Go's netpoller: the transport outside linux, where
// there are no kernel stamps and no spinning receive path.
type netTransport struct {
	conn    net.Conn
	fr      *wire.FrameReader // TCP only
	buf     []byte            // UDP only
	timeout time.Duration
	wdl     time.Time // current write deadline
}

// newNetTransport reads and writes conn, dialled by dialConn, through Go's
// netpoller.
func newNetTransport(conn net.Conn, buf []byte, c *PingPongConfig) *netTransport {
	t := &netTransport{conn: conn, buf: buf, timeout: c.ReadTimeout}
	if buf == nil {
		t.fr = wire.NewFrameReader(conn, c.MessageSize)
	}
	return t
}

func (t *netTransport) write(b []byte) error {
	// Refreshing the deadline on every write would cost a timer update per
	// message; renewing it when half of it is used keeps every write bounded.
	if now := time.Now(); t.wdl.Sub(now) < t.timeout/2 {
		t.wdl = now.Add(t.timeout)
		if err := t.conn.SetWriteDeadline(t.wdl); err != nil {
			return fmt.Errorf("latency: %w", err)
		}
	}
	if _, err := t.conn.Write(b); err != nil {
		return fmt.Errorf("latency: write: %w", err)
	}
	return nil
}

func (t *netTransport) read(deadline time.Time) ([]byte, error) {
	if err := t.conn.SetReadDeadline(deadline); err != nil {
		return nil, fmt.Errorf("latency: %w", err)
	}
	if t.fr != nil {
		_, msg, err := t.fr.Next()
		if err != nil {
			return nil, fmt.Errorf("latency: read: %w", err)
		}
		return msg, nil
	}
	n, err := t.conn.Read(t.buf)
	if err != nil {
		return nil, fmt.Errorf("latency: read: %w", err)
	}
	return t.buf[:n], nil
}

func (t *netTransport) arrived() time.Time { return time.Time{} }

func (t *netTransport) netConn() net.Conn { return t.conn }
func (t *netTransport) abort()            { t.conn.Close() }
func (t *netTransport) close() error      { return t.conn.Close() }
