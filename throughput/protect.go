package throughput

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/netperfkit/netperfkit/internal/allowlist"
	"github.com/netperfkit/netperfkit/internal/iperfwire"
)

// perClient counts each client IP's connections from accept: those not yet
// identified by their cookie and the tests they run. A data stream stops
// counting once its cookie names a test; a test counts until it ends.
type perClient struct {
	mu        sync.Mutex
	conns     map[netip.Addr]int
	accepting map[netip.Addr]int // the IP's tests waiting for their data streams
}

// admit applies the allow-list and the per-client cap to a new connection.
// It returns the release function to call once the connection stops
// counting (idempotent), or the reason and error of a refusal.
func (s *Server) admit(conn net.Conn) (release func(), r reason, err error) {
	ip, ok := allowlist.PeerIP(conn.RemoteAddr())
	if !allowlist.Admits(s.cfg.AllowedClients, ip, ok) {
		return nil, reasonDenied, fmt.Errorf("%w: client %v is not in AllowedClients", ErrAccessDenied, conn.RemoteAddr())
	}
	limit := s.cfg.MaxTestsPerClient
	if limit == 0 || !ok {
		return func() {}, "", nil
	}
	p := &s.clients
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil {
		p.conns, p.accepting = map[netip.Addr]int{}, map[netip.Addr]int{}
	}
	// While one of the client's tests waits for its streams, the streams
	// must get in: they leave the count as soon as their cookie is read.
	if n := p.conns[ip]; n >= limit && (p.accepting[ip] == 0 || n >= limit+2*maxStreams) {
		return nil, reasonLimit, fmt.Errorf("%w: %d connections or tests from %v, MaxTestsPerClient %d", ErrLimit, n, ip, limit)
	}
	p.conns[ip]++
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			if p.conns[ip]--; p.conns[ip] <= 0 {
				delete(p.conns, ip)
			}
		})
	}, "", nil
}

// streamsFrom marks that a test of conn's client is (v) or is no longer
// waiting for its data streams.
func (s *Server) streamsFrom(conn net.Conn, v bool) {
	ip, ok := allowlist.PeerIP(conn.RemoteAddr())
	if !ok || s.cfg.MaxTestsPerClient == 0 {
		return
	}
	p := &s.clients
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.accepting == nil {
		p.conns, p.accepting = map[netip.Addr]int{}, map[netip.Addr]int{}
	}
	if v {
		p.accepting[ip]++
	} else if p.accepting[ip]--; p.accepting[ip] <= 0 {
		delete(p.accepting, ip)
	}
}

// refuse turns a connection away before reading anything: ACCESS_DENIED,
// as iperf3 answers a client it will not serve (its client prints "the
// server is busy running a test"). The write side is shut first and the
// cookie drained for a moment, so the client reads the state byte rather
// than a reset.
func refuse(conn net.Conn) {
	_ = iperfwire.WriteState(conn, iperfwire.AccessDenied, time.Second)
	if cw, ok := conn.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		_ = conn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		_, _ = conn.Read(make([]byte, iperfwire.CookieLen+1))
	}
	_ = conn.Close()
}

// serving is one Serve call's state: its stop function (OneOff) and the
// activity that keeps IdleTimeout from firing.
type serving struct {
	ln       net.Listener
	stop     context.CancelFunc
	active   atomic.Int64
	activity chan struct{}
	accepted atomic.Uint64 // numbers connections in accept order
}

func (sv *serving) touch() {
	select {
	case sv.activity <- struct{}{}:
	default:
	}
}

// watchIdle stops Serve once no connection has been in progress for idle.
func (sv *serving) watchIdle(ctx context.Context, idle time.Duration) {
	tm := time.NewTimer(idle)
	defer tm.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-sv.activity:
			if !tm.Stop() {
				select {
				case <-tm.C:
				default:
				}
			}
			tm.Reset(idle)
		case <-tm.C:
			if sv.active.Load() == 0 {
				sv.stop()
				return
			}
			tm.Reset(idle)
		}
	}
}
