package latency

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Default limits of a Server.
const (
	DefaultMaxConns     = 64
	DefaultIdleTimeout  = 30 * time.Second
	DefaultWriteTimeout = 5 * time.Second
)

// ServerConfig sets the limits of a Server. A nil *ServerConfig means all
// defaults.
type ServerConfig struct {
	// MaxMessageSize is the largest message accepted, header included. Zero
	// means MaxUDPMessageSize (65507). A TCP connection that announces a
	// longer message is closed; a longer UDP datagram is ignored.
	MaxMessageSize int
	// MaxConns is the largest number of concurrent TCP connections; further
	// connections are closed as soon as they are accepted. Zero means
	// DefaultMaxConns (64).
	MaxConns int
	// IdleTimeout closes a TCP connection that sends nothing for this long,
	// including one that stops in the middle of a message, and bounds every
	// UDP read (after which the read is simply retried). Zero means
	// DefaultIdleTimeout (30 s).
	IdleTimeout time.Duration
	// WriteTimeout bounds every reply write. Zero means DefaultWriteTimeout
	// (5 s); a TCP connection whose reply times out is closed. (UDP renews
	// its deadlines in batches; a UDP reply may block for up to
	// IdleTimeout+WriteTimeout and is then dropped.)
	WriteTimeout time.Duration
}

// ServerStats counts what a Server has seen. All counts are cumulative.
type ServerStats struct {
	// Messages is the number of well-formed client messages received.
	Messages int64 `json:"messages"`
	// Replies is the number of replies sent.
	Replies int64 `json:"replies"`
	// Rejected is the number of messages ignored or connections closed for
	// malformed input: too short, a length field that lies or is too large,
	// or no client flag.
	Rejected int64 `json:"rejected"`
	// Conns is the number of TCP connections accepted and served.
	Conns int64 `json:"conns"`
	// ConnsRefused is the number of TCP connections closed because MaxConns
	// were already open.
	ConnsRefused int64 `json:"conns_refused"`
	// Timeouts is the number of TCP connections closed by IdleTimeout or
	// WriteTimeout.
	Timeouts int64 `json:"timeouts"`
}

// Server is a sockperf-compatible echo server over UDP and TCP: it answers
// the messages that ask for a reply (FlagPong, not FlagWarmup) with the same
// bytes and the client flag cleared, as `sockperf server` does, so stock
// `sockperf ping-pong` and `sockperf under-load` clients can measure it.
//
// A Server is safe for concurrent use; one Server may serve several
// connections and listeners at once.
type Server struct {
	cfg ServerConfig

	conns    atomic.Int64 // open TCP connections
	messages atomic.Int64
	replies  atomic.Int64
	rejected atomic.Int64
	accepted atomic.Int64
	refused  atomic.Int64
	timeouts atomic.Int64
}

// NewServer returns a Server with the limits of cfg (nil means defaults). The
// error wraps ErrInvalidConfig for negative limits or a MaxMessageSize below
// HeaderSize.
func NewServer(cfg *ServerConfig) (*Server, error) {
	var c ServerConfig
	if cfg != nil {
		c = *cfg
	}
	if c.MaxMessageSize == 0 {
		c.MaxMessageSize = MaxUDPMessageSize
	}
	if c.MaxConns == 0 {
		c.MaxConns = DefaultMaxConns
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = DefaultWriteTimeout
	}
	switch {
	case c.MaxMessageSize < HeaderSize:
		return nil, fmt.Errorf("%w: MaxMessageSize %d is below the %d-byte header", ErrInvalidConfig, c.MaxMessageSize, HeaderSize)
	case c.MaxConns < 0 || c.IdleTimeout < 0 || c.WriteTimeout < 0:
		return nil, fmt.Errorf("%w: negative server limit", ErrInvalidConfig)
	}
	return &Server{cfg: c}, nil
}

// Stats returns the Server's counters.
func (s *Server) Stats() ServerStats {
	return ServerStats{
		Messages:     s.messages.Load(),
		Replies:      s.replies.Load(),
		Rejected:     s.rejected.Load(),
		Conns:        s.accepted.Load(),
		ConnsRefused: s.refused.Load(),
		Timeouts:     s.timeouts.Load(),
	}
}

// accept reports whether the n-byte datagram in buf gets a reply, which
// handle then holds in buf[:n]. A datagram longer than the maximum (buf has one
// byte more to detect it) is rejected.
func (s *Server) accept(buf []byte, n int) bool {
	if n > s.cfg.MaxMessageSize {
		s.rejected.Add(1)
		return false
	}
	return s.handle(buf[:n])
}

// handle checks one message and turns it into its reply in place. It reports
// whether a reply is due.
func (s *Server) handle(msg []byte) bool {
	h, err := DecodeHeader(msg)
	if err != nil || int(h.Length) != len(msg) || h.Flags&FlagClient == 0 {
		s.rejected.Add(1)
		return false
	}
	s.messages.Add(1)
	if h.Flags&FlagPong == 0 || h.Flags&FlagWarmup != 0 {
		return false
	}
	h.Flags &^= FlagClient
	h.Put(msg)
	return true
}

// ServeUDP answers the datagrams arriving on conn until ctx ends, then closes
// conn and returns nil. It returns early with the error of a failed read.
// Malformed datagrams are ignored and counted in Stats().Rejected.
func (s *Server) ServeUDP(ctx context.Context, conn net.PacketConn) error {
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	defer conn.Close()
	buf := make([]byte, s.cfg.MaxMessageSize+1)
	uc, _ := conn.(*net.UDPConn)
	// Reads and writes have deadlines, renewed every 256 datagrams and after
	// each timeout rather than per datagram, which would cost a clock read
	// and two timer updates per message. Every read ends by the read deadline
	// and is followed by a renewal, so a write never starts later than
	// IdleTimeout after the last renewal and may block for WriteTimeout.
	renew := func() {
		now := time.Now()
		_ = conn.SetReadDeadline(now.Add(s.cfg.IdleTimeout))
		_ = conn.SetWriteDeadline(now.Add(s.cfg.IdleTimeout + s.cfg.WriteTimeout))
	}
	renew()
	for i := 1; ; i++ {
		if i%256 == 0 {
			renew()
		}
		var (
			n    int
			ap   netip.AddrPort
			addr net.Addr
			err  error
		)
		if uc != nil {
			n, ap, err = uc.ReadFromUDPAddrPort(buf)
		} else {
			n, addr, err = conn.ReadFrom(buf)
		}
		if err == nil {
			if !s.accept(buf, n) {
				continue
			}
			// Counted before the write so that a client holding the reply
			// never sees a smaller count.
			s.replies.Add(1)
			var werr error
			if uc != nil {
				_, werr = uc.WriteToUDPAddrPort(buf[:n], ap)
			} else {
				_, werr = conn.WriteTo(buf[:n], addr)
			}
			if werr != nil {
				// A reply that cannot be sent (a full buffer past the write
				// deadline, an unreachable peer) is lost, as on the wire;
				// the server goes on serving.
				s.replies.Add(-1)
				renew()
			}
			continue
		}
		if ctx.Err() != nil {
			return nil
		}
		if isTimeout(err) {
			renew()
			continue
		}
		return fmt.Errorf("latency: udp server: %w", err)
	}
}

// ServeTCP accepts connections on ln and answers them until ctx ends, then
// closes ln and every connection, waits for their goroutines and returns nil.
// It returns early with the error of a failed Accept. Connections beyond
// MaxConns are closed at once; a connection that sends a malformed frame, stays
// silent for IdleTimeout or does not take a reply within WriteTimeout is
// closed, without affecting the others.
func (s *Server) ServeTCP(ctx context.Context, ln net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	defer ln.Close()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if isTimeout(err) {
				continue
			}
			return fmt.Errorf("latency: tcp server: %w", err)
		}
		if s.conns.Add(1) > int64(s.cfg.MaxConns) {
			s.conns.Add(-1)
			s.refused.Add(1)
			c.Close()
			continue
		}
		s.accepted.Add(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer s.conns.Add(-1)
			s.serveConn(ctx, c)
		}()
	}
}

// deadlineReader sets a read deadline before every read, so that a peer that
// stalls, even in the middle of a frame, is cut off after the idle timeout.
type deadlineReader struct {
	c       net.Conn
	timeout time.Duration
}

func (d deadlineReader) Read(b []byte) (int, error) {
	if err := d.c.SetReadDeadline(time.Now().Add(d.timeout)); err != nil {
		return 0, err
	}
	return d.c.Read(b)
}

func (s *Server) serveConn(ctx context.Context, c net.Conn) {
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	defer c.Close()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	fr := NewFrameReader(deadlineReader{c, s.cfg.IdleTimeout}, s.cfg.MaxMessageSize)
	var out []byte
	var pending int64
	for {
		_, msg, err := fr.Next()
		if err != nil {
			switch {
			case errors.Is(err, ErrBadLength):
				s.rejected.Add(1)
			case isTimeout(err):
				s.timeouts.Add(1)
			case errors.Is(err, io.ErrUnexpectedEOF):
				s.rejected.Add(1)
			}
			return
		}
		if s.handle(msg) {
			out = append(out, msg...)
			pending++
		}
		// Several messages may share one read: reply to all of them in one
		// write before the next read could block.
		if len(out) > 0 && (len(out) >= 64<<10 || !fr.whole()) {
			_ = c.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
			s.replies.Add(pending)
			if _, err := c.Write(out); err != nil {
				s.replies.Add(-pending)
				if isTimeout(err) {
					s.timeouts.Add(1)
				}
				return
			}
			out, pending = out[:0], 0
		}
	}
}

// Listen listens on addr ("host:port") with network "udp" or "tcp" (or their
// "4"/"6" forms) and returns the bound address (which tells the port chosen
// for port 0) and serve, which answers on the listener until ctx ends, as
// ServeUDP or ServeTCP, and then closes it. Clients can connect as soon as
// Listen returns; their messages wait until serve runs. The caller must call
// serve once, typically in its own goroutine, or the listener stays open. An
// invalid network gives an error wrapping ErrInvalidConfig.
func (s *Server) Listen(ctx context.Context, network, addr string) (net.Addr, func() error, error) {
	var lc net.ListenConfig
	switch network {
	case "udp", "udp4", "udp6":
		pc, err := lc.ListenPacket(ctx, network, addr)
		if err != nil {
			return nil, nil, fmt.Errorf("latency: %w", err)
		}
		return pc.LocalAddr(), func() error { return s.ServeUDP(ctx, pc) }, nil
	case "tcp", "tcp4", "tcp6":
		ln, err := lc.Listen(ctx, network, addr)
		if err != nil {
			return nil, nil, fmt.Errorf("latency: %w", err)
		}
		return ln.Addr(), func() error { return s.ServeTCP(ctx, ln) }, nil
	}
	return nil, nil, fmt.Errorf("%w: network %q is not udp or tcp", ErrInvalidConfig, network)
}

// ListenAndServe listens on addr ("host:port") with network "udp" or "tcp"
// (or their "4"/"6" forms) and serves until ctx ends. ready, if not nil, is
// called with the bound address once the server listens (useful with port 0).
// Listen gives the address without a callback.
func (s *Server) ListenAndServe(ctx context.Context, network, addr string, ready func(net.Addr)) error {
	a, serve, err := s.Listen(ctx, network, addr)
	if err != nil {
		return err
	}
	if ready != nil {
		ready(a)
	}
	return serve()
}
