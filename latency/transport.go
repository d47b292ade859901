package latency

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	wire "github.com/netperfkit/netperfkit/internal/sockperfwire"
)

// transport moves whole sockperf messages. write may be called from one
// goroutine while read is called from another.
type transport interface {
	// write sends one message (or several back to back over TCP) with a
	// write deadline of at least timeout.
	write(b []byte) error
	// read returns the next message; the slice is valid until the next
	// read. It returns an error wrapping os.ErrDeadlineExceeded at deadline.
	read(deadline time.Time) ([]byte, error)
	// abort makes pending and later reads and writes fail soon; it may be
	// called from any goroutine.
	abort()
	close() error
	// arrived is when the kernel received the message read last (a
	// wall-clock reading), zero when the transport does not know.
	arrived() time.Time
}

// isTimeout reports whether err is, or wraps, a timeout: a passed deadline
// (os.ErrDeadlineExceeded) or another net.Error that says so.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// dialConn dials addr for a transport, with Nagle's algorithm off over TCP.
// buf is nil over TCP, which a FrameReader reads; over UDP it is the receive
// buffer, wire.MaxUDPMessageSize+1 bytes.
func dialConn(ctx context.Context, network, addr string) (c net.Conn, buf []byte, err error) {
	var d net.Dialer
	c, err = d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, nil, fmt.Errorf("latency: %w", err)
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
		return c, nil, nil
	}
	return c, make([]byte, wire.MaxUDPMessageSize+1), nil
}

// dial connects the run's transport for c: on linux, one that reads
// outside Go's netpoller, spinning when c.Spin is set (spinTransport);
// elsewhere Go's netpoller (netTransport).
func dial(ctx context.Context, addr string, c *PingPongConfig) (transport, error) {
	conn, buf, err := dialConn(ctx, c.Network, addr)
	if err != nil {
		return nil, err
	}
	tr, err := kernelTransport(conn, buf, c)
	if err != nil {
		conn.Close()
		return nil, err
	}
	return tr, nil
}

// answersFrom sends one sockperf ping-pong message to addr from an
// unconnected UDP socket, which takes a reply from any address, and returns
// where the reply came from (nil when none came within c.ReadTimeout, at
// most 2 s) and whether that is addr itself.
func answersFrom(ctx context.Context, addr string, c *PingPongConfig) (from net.Addr, same bool, err error) {
	to, err := net.ResolveUDPAddr(c.Network, addr)
	if err != nil {
		return nil, false, fmt.Errorf("latency: %w", err)
	}
	pc, err := net.ListenUDP(c.Network, nil)
	if err != nil {
		return nil, false, fmt.Errorf("latency: %w", err)
	}
	defer pc.Close()
	stop := context.AfterFunc(ctx, func() { pc.Close() })
	defer stop()
	msg := make([]byte, c.MessageSize)
	wire.Header{Seq: 1, Flags: wire.FlagClient | wire.FlagPong, Length: uint32(len(msg))}.Put(msg)
	if _, err := pc.WriteToUDP(msg, to); err != nil {
		return nil, false, cmp.Or(ctx.Err(), fmt.Errorf("latency: %w", err))
	}
	if err := pc.SetReadDeadline(time.Now().Add(min(c.ReadTimeout, 2*time.Second))); err != nil {
		return nil, false, fmt.Errorf("latency: %w", err)
	}
	buf := make([]byte, wire.MaxUDPMessageSize+1)
	for {
		n, src, err := pc.ReadFromUDPAddrPort(buf)
		switch {
		case ctx.Err() != nil:
			return nil, false, ctx.Err()
		case isTimeout(err):
			return nil, false, nil
		case err != nil:
			return nil, false, fmt.Errorf("latency: %w", err)
		}
		if h, err := wire.DecodeHeader(buf[:n]); err != nil || h.Flags&wire.FlagClient != 0 || h.Seq != 1 {
			continue // not the reply
		}
		unmap := func(a netip.AddrPort) netip.AddrPort { return netip.AddrPortFrom(a.Addr().Unmap(), a.Port()) }
		src = unmap(src)
		return net.UDPAddrFromAddrPort(src), src == unmap(to.AddrPort()), nil
	}
}
