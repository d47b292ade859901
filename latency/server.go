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

	"github.com/netperfkit/netperfkit/internal/allowlist"

	wire "github.com/netperfkit/netperfkit/internal/sockperfwire"
)

// Default limits of a Server.
const (
	defaultMaxConns     = 64
	defaultIdleTimeout  = 30 * time.Second
	defaultWriteTimeout = 5 * time.Second
	// defaultMaxMessageSize is the largest UDP payload, and `sockperf
	// server`'s default -m for UDP and TCP alike (3.7 allows up to
	// 1048575 over TCP when -m says so).
	defaultMaxMessageSize = wire.MaxUDPMessageSize
)

// ServerConfig sets the limits and hooks of a Server. A nil *ServerConfig
// means all defaults and no hooks.
type ServerConfig struct {
	// MaxMessageSize is the largest message accepted, header included. Zero
	// means 65507 bytes (the largest UDP payload, and sockperf server's
	// default -m over TCP too). A TCP connection that announces a longer
	// message is closed (PingPong's error then names this limit); a longer
	// UDP datagram is ignored.
	MaxMessageSize int
	// MaxConns is the largest number of concurrent stream connections;
	// further connections are closed as soon as they are accepted. Zero
	// means 64.
	MaxConns int
	// IdleTimeout closes a stream connection that sends nothing for this
	// long, including one that stops in the middle of a message, and,
	// except on linux's blocking UDP loop (see Server), bounds every UDP
	// read (after which the read is simply retried). Zero means 30 s.
	IdleTimeout time.Duration
	// WriteTimeout bounds every reply write. Zero means 5 s; a stream
	// connection whose reply times out is closed. (UDP renews its deadlines
	// in batches; a UDP reply may block for up to IdleTimeout+WriteTimeout
	// and is then dropped.)
	WriteTimeout time.Duration
	// AllowedClients, when not empty, lists the client networks served.
	// A stream connection from elsewhere is closed as soon as it is
	// accepted, before anything is read and before it counts against
	// MaxConns; a datagram from elsewhere is dropped without a reply. Both
	// are counted in ServerStats.Denied and reported to OnFailure as
	// ErrAccessDenied: every such connection, but datagrams only once per
	// source IP address a minute and at most 1024 sources a minute for each
	// ServePacket call, so that a flood cannot make the hook the
	// bottleneck. Client addresses are compared without their zone and, for
	// IPv4-mapped IPv6 ones, as the IPv4 address they carry; IPv4-mapped
	// prefixes (::ffff:10.0.0.0/104) mean their IPv4 prefix. Peers without
	// an IP address (unix sockets) are refused. NewServer copies the list;
	// an invalid prefix is an ErrInvalidConfig.
	AllowedClients []netip.Prefix
	// OnListen, if set, is called by ListenAndServe with the bound address
	// (which tells the port chosen for port 0) once clients can connect,
	// before serving starts.
	OnListen func(net.Addr)
	// OnFailure, if set, is called for every refused connection, rejected
	// message and connection closed on a timeout, in addition to the
	// counters of Stats, with the peer's address (nil when unknown) and an
	// error that tells which: it matches ErrAccessDenied (counted in
	// ServerStats.Denied, or ServerStats.ConnsRefused when MaxConns were
	// open: "too many connections"),
	// ErrMalformed (ServerStats.Rejected), os.ErrDeadlineExceeded
	// (ServerStats.Timeouts), or, for a temporary failure of Accept
	// after which Serve waits and accepts again, the listener's own error
	// (a *net.OpError whose Op is "accept", such as EMFILE, out of file
	// descriptors; ServerStats.AcceptErrors, with a nil address). It is called from the serving goroutines, possibly
	// concurrently, and for every malformed datagram of a flood: keep it
	// fast.
	OnFailure func(remote net.Addr, err error)
}

// errTooManyConns is reported to ServerConfig.OnFailure for a connection
// closed because MaxConns were open; it matches ErrAccessDenied, as a busy
// throughput server's refusal does.
var errTooManyConns error = tooManyConns{}

// tooManyConns is errTooManyConns' type: its own message, matching
// ErrAccessDenied.
type tooManyConns struct{}

func (tooManyConns) Error() string { return "latency: server: too many connections" }

func (tooManyConns) Is(target error) bool { return target == ErrAccessDenied }

// ErrMalformed is reported to ServerConfig.OnFailure for a message that is
// too short or too long, has a length field that lies or no client flag. A
// stream connection whose length field is bad is then closed; other
// malformed messages are ignored.
var ErrMalformed = errors.New("latency: server: malformed message")

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
	// Conns is the number of stream connections accepted and served.
	Conns int64 `json:"conns"`
	// ConnsRefused is the number of stream connections closed because
	// MaxConns were already open.
	ConnsRefused int64 `json:"conns_refused"`
	// Timeouts is the number of stream connections closed by IdleTimeout or
	// WriteTimeout.
	Timeouts int64 `json:"timeouts"`
	// Denied is the number of stream connections closed and datagrams
	// dropped because their client is not in AllowedClients. Such
	// datagrams count nowhere else.
	Denied int64 `json:"denied"`
	// AcceptErrors is the number of temporary Accept failures Serve
	// waited out.
	AcceptErrors int64 `json:"accept_errors"`
}

// Server is a sockperf-compatible echo server over UDP and TCP: it answers
// the messages that ask for a reply (pong flag set, not warm-up) with the
// same bytes and the client flag cleared, as `sockperf server` does, so stock
// `sockperf ping-pong` and `sockperf under-load` clients can measure it.
//
// On linux it answers a *net.UDPConn and each *net.TCPConn with blocking
// system calls outside Go's netpoller, as sockperf server does. Give such a
// process a GOMAXPROCS of at least 2 even on one CPU: with 1, the runtime
// takes the P from every read that waits more than about 20 us and its
// monitor then polls every 20 us, about a quarter more CPU a message
// (examples/pingpong -server raises it).
//
// A Server is safe for concurrent use; one Server may serve several
// listeners and packet connections at once, and its Stats add them up.
// Create it with NewServer: the zero Server refuses to serve (its methods
// return an error, Addr nil and Stats zeros).
type Server struct {
	cfg   ServerConfig
	ready bool                     // made by NewServer
	addr  atomic.Pointer[net.Addr] // the first address served

	conns    atomic.Int64 // open stream connections
	messages atomic.Int64
	replies  atomic.Int64
	rejected atomic.Int64
	accepted atomic.Int64
	refused  atomic.Int64
	timeouts atomic.Int64
	denied   atomic.Int64
	acceptEr atomic.Int64

	sleepFn func(ctx context.Context, d time.Duration) bool // tests only
}

// NewServer returns a Server with the limits and hooks of cfg (nil means
// defaults). The error wraps ErrInvalidConfig for negative limits, a
// MaxMessageSize below the 14-byte header or an invalid AllowedClients
// prefix.
func NewServer(cfg *ServerConfig) (*Server, error) {
	var c ServerConfig
	if cfg != nil {
		c = *cfg
	}
	if c.MaxMessageSize == 0 {
		c.MaxMessageSize = defaultMaxMessageSize
	}
	if c.MaxConns == 0 {
		c.MaxConns = defaultMaxConns
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = defaultIdleTimeout
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = defaultWriteTimeout
	}
	switch {
	case c.MaxMessageSize < wire.HeaderSize:
		return nil, fmt.Errorf("%w: MaxMessageSize %d is below the %d-byte header", ErrInvalidConfig, c.MaxMessageSize, wire.HeaderSize)
	}
	if err := negative(field{"MaxConns", c.MaxConns}, field{"IdleTimeout", c.IdleTimeout},
		field{"WriteTimeout", c.WriteTimeout}); err != nil {
		return nil, err
	}
	allowed, err := allowlist.Normalize(c.AllowedClients)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	c.AllowedClients = allowed
	return &Server{cfg: c, ready: true}, nil
}

// errNotReady is the error of the serving methods of a Server that NewServer
// did not make.
var errNotReady = errors.New("latency: Server not created with NewServer")

// check refuses to serve on a Server NewServer did not make.
func (s *Server) check(ctx context.Context) error {
	switch {
	case s == nil || !s.ready:
		return errNotReady
	case ctx == nil:
		return errNilContext
	}
	return nil
}

// Addr returns the address the Server is bound to once it serves: that of
// the first listener or packet connection given to Serve or ServePacket
// (or bound by ListenAndServe), which tells the port chosen for port 0. It
// returns nil before.
func (s *Server) Addr() net.Addr {
	if s == nil {
		return nil
	}
	if a := s.addr.Load(); a != nil {
		return *a
	}
	return nil
}

// bound remembers a, unless an address is already known.
func (s *Server) bound(a net.Addr) {
	if a != nil {
		s.addr.CompareAndSwap(nil, &a)
	}
}

// Stats returns the Server's counters (zeros for a nil Server).
func (s *Server) Stats() ServerStats {
	if s == nil {
		return ServerStats{}
	}
	return ServerStats{
		Messages:     s.messages.Load(),
		Replies:      s.replies.Load(),
		Rejected:     s.rejected.Load(),
		Conns:        s.accepted.Load(),
		ConnsRefused: s.refused.Load(),
		Timeouts:     s.timeouts.Load(),
		Denied:       s.denied.Load(),
		AcceptErrors: s.acceptEr.Load(),
	}
}

// reject counts a malformed message and reports it.
func (s *Server) reject(remote net.Addr, err error) {
	s.rejectLater(remote, err)()
}

// rejectLater returns the counting and reporting of a malformed message,
// for a connection that reports only once it has given back its slot.
func (s *Server) rejectLater(remote net.Addr, err error) func() {
	return func() {
		s.rejected.Add(1)
		s.report(remote, fmt.Errorf("%w: %w", ErrMalformed, err))
	}
}

// timedOutLater returns the counting and reporting of a connection closed
// on a timeout.
func (s *Server) timedOutLater(remote net.Addr, err error) func() {
	return func() {
		s.timeouts.Add(1)
		s.report(remote, fmt.Errorf("latency: server: %w", err))
	}
}

func (s *Server) report(remote net.Addr, err error) {
	if s.cfg.OnFailure != nil {
		s.cfg.OnFailure(remote, err)
	}
}

// handle checks one message and turns it into its reply in place. It reports
// whether a reply is due, and the reason of a malformed message.
func (s *Server) handle(msg []byte) (reply bool, err error) {
	h, err := wire.DecodeHeader(msg)
	switch {
	case err != nil:
		return false, err
	case int(h.Length) != len(msg):
		return false, fmt.Errorf("length field %d, message of %d bytes", h.Length, len(msg))
	case h.Flags&wire.FlagClient == 0:
		return false, errors.New("no client flag")
	}
	s.messages.Add(1)
	if h.Flags&wire.FlagPong == 0 || h.Flags&wire.FlagWarmup != 0 {
		return false, nil
	}
	h.Flags &^= wire.FlagClient
	h.Put(msg)
	return true, nil
}

// ServePacket answers the datagrams arriving on pc (a UDP socket, or any
// other net.PacketConn that keeps message boundaries) until ctx ends, then
// closes pc and returns ctx.Err(). It returns early, also closing pc, with
// the error of a failed read, and at once with an error for a nil pc.
// Malformed datagrams are ignored, counted in Stats().Rejected and reported
// to OnFailure as ErrMalformed; datagrams from outside AllowedClients are
// dropped, counted in Stats().Denied and reported as ErrAccessDenied (once
// per source a minute). On linux a *net.UDPConn is served as `sockperf
// server` serves UDP, with blocking system calls on a duplicate of its
// socket that Go's netpoller does not watch, and pc itself is closed at
// once.
func (s *Server) ServePacket(ctx context.Context, pc net.PacketConn) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	if pc == nil {
		return errors.New("latency: ServePacket: nil net.PacketConn")
	}
	s.bound(pc.LocalAddr())
	stop := context.AfterFunc(ctx, func() { pc.Close() })
	defer stop()
	defer pc.Close()
	p := newPacketLoop(s, pc)
	if p.uc != nil {
		if served, err := p.serveRaw(ctx); served {
			return err
		}
	}
	for {
		err := p.serveOne()
		if err == nil {
			continue
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if isTimeout(err) {
			p.renew()
			continue
		}
		return fmt.Errorf("latency: udp server: %w", err)
	}
}

// packetLoop is the state of ServePacket. Reads and writes have deadlines,
// renewed every 256 datagrams and after each timeout rather than per
// datagram, which would cost a clock read and two timer updates per message.
// Every read ends by the read deadline and is followed by a renewal, so a
// write never starts later than IdleTimeout after the last renewal and may
// block for WriteTimeout.
type packetLoop struct {
	s   *Server
	pc  net.PacketConn
	uc  *net.UDPConn // pc, when it is one: reads without allocating
	pin *pinned      // uc's replies from the address asked, when bound to a wildcard (linux)
	buf []byte       // one byte more than the maximum, to detect longer datagrams
	n   int          // datagrams read since the last renewal

	denied deniedSources // sources outside AllowedClients already reported
}

func newPacketLoop(s *Server, pc net.PacketConn) *packetLoop {
	p := &packetLoop{s: s, pc: pc, buf: make([]byte, s.cfg.MaxMessageSize+1)}
	p.uc, _ = pc.(*net.UDPConn)
	if p.uc != nil {
		p.pin = pin(p.uc)
	}
	p.renew()
	return p
}

func (p *packetLoop) renew() {
	now := time.Now()
	_ = p.pc.SetReadDeadline(now.Add(p.s.cfg.IdleTimeout))
	_ = p.pc.SetWriteDeadline(now.Add(p.s.cfg.IdleTimeout + p.s.cfg.WriteTimeout))
	p.n = 0
}

// serveOne reads one datagram and answers it if it asks for a reply. It
// returns only read errors: a reply that cannot be sent (a full buffer past
// the write deadline, an unreachable peer) is lost, as on the wire.
func (p *packetLoop) serveOne() error {
	if p.n++; p.n == 256 {
		p.renew()
	}
	var (
		n    int
		ap   netip.AddrPort
		addr net.Addr
		err  error
	)
	switch {
	case p.pin != nil:
		n, ap, err = p.pin.read(p.buf)
	case p.uc != nil:
		n, ap, err = p.uc.ReadFromUDPAddrPort(p.buf)
	default:
		n, addr, err = p.pc.ReadFrom(p.buf)
	}
	if err != nil {
		return err
	}
	s := p.s
	if len(s.cfg.AllowedClients) > 0 && !p.admits(ap, addr) {
		return nil
	}
	var reply bool
	if n > s.cfg.MaxMessageSize {
		err = fmt.Errorf("datagram of %d bytes exceeds MaxMessageSize %d", n, s.cfg.MaxMessageSize)
	} else {
		reply, err = s.handle(p.buf[:n])
	}
	if err != nil {
		if addr == nil && ap.IsValid() {
			addr = net.UDPAddrFromAddrPort(ap)
		}
		s.reject(addr, err)
		return nil
	}
	if !reply {
		return nil
	}
	// Counted before the write so that a client holding the reply never
	// sees a smaller count.
	s.replies.Add(1)
	switch {
	case p.pin != nil:
		err = p.pin.write(p.buf[:n], ap)
	case p.uc != nil:
		_, err = p.uc.WriteToUDPAddrPort(p.buf[:n], ap)
	default:
		_, err = p.pc.WriteTo(p.buf[:n], addr)
	}
	if err != nil {
		s.replies.Add(-1)
		p.renew()
	}
	return nil
}

// admits applies the allow-list to a datagram from ap (a *net.UDPConn's
// read) or addr (any other's); it counts and reports a denied one.
func (p *packetLoop) admits(ap netip.AddrPort, addr net.Addr) bool {
	var ip netip.Addr
	ok := ap.IsValid()
	if ok {
		ip = ap.Addr().Unmap().WithZone("")
	} else {
		ip, ok = allowlist.PeerIP(addr)
	}
	s := p.s
	if s.admits(ip, ok) {
		return true
	}
	s.denied.Add(1)
	if s.cfg.OnFailure != nil && p.denied.first(ip, time.Now()) {
		if addr == nil && ap.IsValid() {
			addr = net.UDPAddrFromAddrPort(ap)
		}
		s.report(addr, fmt.Errorf("%w: datagram from %v", ErrAccessDenied, addr))
	}
	return false
}

// Serve accepts connections on ln and answers them until ctx ends, then
// closes ln and every connection, waits for their goroutines and returns
// ctx.Err(). Any stream listener works: TCP, unix sockets, or an in-memory
// one; sockperf frames each message with its length field.
//
// A temporary Accept failure (an error with a Temporary method that
// returns true, such as EMFILE when the process is out of file descriptors,
// or a timeout) is counted in Stats().AcceptErrors and reported to
// OnFailure, wrapping Accept's error; Serve then waits, 5 ms after the first failure
// and twice as long after each next one up to 1 s, as net/http does, and
// accepts again. Any other Accept failure (ln closed) makes Serve return
// early, having closed ln and its connections, with the error; a nil ln
// returns an error at once.
//
// Connections from outside AllowedClients and beyond MaxConns are closed at
// once; a connection that sends a malformed frame, stays silent for
// IdleTimeout or does not take a reply within WriteTimeout is closed,
// without affecting the others. Each of these is counted in Stats and
// reported to OnFailure once the connection's MaxConns slot is free again.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	if ln == nil {
		return errors.New("latency: Serve: nil net.Listener")
	}
	s.bound(ln.Addr())
	// The connections' goroutines are waited for after cancel, which closes
	// their connections: an Accept failure returns at once too.
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	defer ln.Close()
	var backoff time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if !isTemporary(err) {
				return fmt.Errorf("latency: server: accept: %w", err)
			}
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.acceptEr.Add(1)
			s.report(nil, fmt.Errorf("latency: server: accept failed: %w (retrying in %v)", err, backoff))
			if !s.sleep(ctx, backoff) {
				return ctx.Err()
			}
			continue
		}
		backoff = 0
		if !s.admits(allowlist.PeerIP(c.RemoteAddr())) {
			s.denyConn(c)
			continue
		}
		if s.conns.Add(1) > int64(s.cfg.MaxConns) {
			s.conns.Add(-1)
			c.Close()
			s.refused.Add(1)
			s.report(c.RemoteAddr(), fmt.Errorf("%w (%d open)", errTooManyConns, s.cfg.MaxConns))
			continue
		}
		s.accepted.Add(1)
		wg.Go(func() {
			if fail := s.serveConn(ctx, c); fail != nil {
				// Reported after the slot is free, so that a client told
				// of the failure may connect again at once.
				s.conns.Add(-1)
				fail()
				return
			}
			s.conns.Add(-1)
		})
	}
}

// isTemporary reports whether an Accept error is worth waiting out, as
// net/http decides: EMFILE, ENFILE, EINTR and timeouts say so through the
// Temporary method of their net.Error and syscall.Errno.
func isTemporary(err error) bool {
	var t interface{ Temporary() bool }
	return errors.As(err, &t) && t.Temporary()
}

// sleep waits d or until ctx ends; false in the latter case. The server's
// tests replace it to run the accept backoff in no time.
func (s *Server) sleep(ctx context.Context, d time.Duration) bool {
	if s.sleepFn != nil {
		return s.sleepFn(ctx, d)
	}
	return timerSleep(ctx, d)
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

// serveConn answers c until it fails or ctx ends, and closes it. It
// returns the counting and reporting of the failure that closed c, if any,
// for the caller to run once c's MaxConns slot is free.
func (s *Server) serveConn(ctx context.Context, c net.Conn) (fail func()) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
		if st := rawStreamOf(tc, &s.cfg); st != nil {
			// Blocking system calls outside the netpoller, as sockperf
			// server reads and writes (linux).
			stop := context.AfterFunc(ctx, st.shutdown)
			defer stop()
			defer st.close()
			return s.serveFrames(ctx, st, st.write, c.RemoteAddr())
		}
	}
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	defer c.Close()
	write := func(b []byte) error {
		_ = c.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
		_, err := c.Write(b)
		return err
	}
	return s.serveFrames(ctx, deadlineReader{c, s.cfg.IdleTimeout}, write, c.RemoteAddr())
}

// serveFrames answers the frames read from rd with write until either
// fails or ctx ends. It returns the counting and reporting of the failure
// that ended it, if any.
func (s *Server) serveFrames(ctx context.Context, rd io.Reader, write func([]byte) error, remote net.Addr) (fail func()) {
	fr := wire.NewFrameReader(rd, s.cfg.MaxMessageSize)
	var out []byte
	var pending int64
	flush := func() error {
		s.replies.Add(pending)
		err := write(out)
		if err != nil {
			s.replies.Add(-pending)
		}
		out, pending = out[:0], 0
		return err
	}
	for {
		_, msg, err := fr.Next()
		if err != nil {
			if len(out) > 0 && ctx.Err() == nil {
				// The messages before the bad frame or the end were
				// good: answer them, as far as the peer takes them.
				_ = flush()
			}
			switch {
			case ctx.Err() != nil:
			case errors.Is(err, wire.ErrBadLength), errors.Is(err, io.ErrUnexpectedEOF):
				return s.rejectLater(remote, err)
			case isTimeout(err):
				return s.timedOutLater(remote, err)
			}
			return nil
		}
		reply, err := s.handle(msg)
		if err != nil {
			s.reject(remote, err)
		}
		if reply {
			out = append(out, msg...)
			pending++
		}
		// Several messages may share one read: reply to all of them in one
		// write before the next read could block.
		if len(out) > 0 && (len(out) >= 64<<10 || !fr.Whole()) {
			if err := flush(); err != nil {
				if isTimeout(err) && ctx.Err() == nil {
					return s.timedOutLater(remote, err)
				}
				return nil
			}
		}
	}
}

// ListenAndServe listens on address ("host:port") with network "udp" or
// "tcp" (or their "4"/"6" forms), calls OnListen with the bound address
// (which Addr also returns from then on), and serves with ServePacket or
// Serve until ctx ends, when it returns ctx.Err(). An invalid network gives
// an error wrapping ErrInvalidConfig.
func (s *Server) ListenAndServe(ctx context.Context, network, address string) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	addr := address
	var lc net.ListenConfig
	switch network {
	case "udp", "udp4", "udp6":
		pc, err := lc.ListenPacket(ctx, network, addr)
		if err != nil {
			return fmt.Errorf("latency: %w", err)
		}
		s.bound(pc.LocalAddr())
		if s.cfg.OnListen != nil {
			s.cfg.OnListen(pc.LocalAddr())
		}
		return s.ServePacket(ctx, pc)
	case "tcp", "tcp4", "tcp6":
		ln, err := lc.Listen(ctx, network, addr)
		if err != nil {
			return fmt.Errorf("latency: %w", err)
		}
		s.bound(ln.Addr())
		if s.cfg.OnListen != nil {
			s.cfg.OnListen(ln.Addr())
		}
		return s.Serve(ctx, ln)
	}
	return fmt.Errorf("%w: network %q is not udp or tcp (or their 4/6 forms)", ErrInvalidConfig, network)
}
