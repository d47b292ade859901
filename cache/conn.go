package cache

import (
	"bufio"
	"context"
	"io"
	"net"
	"sync"
	"time"

	"github.com/netperfkit/netperfkit/internal/kstamp"
	"github.com/netperfkit/netperfkit/internal/resp"
)

// stampsKey carries an open-loop request's *stamps in its context.
type stampsKey struct{}

// stamps receives the times of an open-loop request that latency.Schedule
// splits the client's share by (latency.Request's Sent and Arrived; a nil
// one is not reported).
type stamps struct {
	sent, arrived *time.Time
	// left receives the return of the request's write (latency.Request's
	// Left): the server's time, which queues the requests after it, runs
	// from there, so that a client thread descheduled between sent and
	// its write is not charged as the server's slowness (issue 31).
	left *time.Time
	// kernel, when the run takes the kernel view, records the request's
	// kernel-to-kernel time (kview.go) if sample is set: the request is in
	// the view's sample, the only ones whose send is stamped.
	kernel *kernelRecorder
	sample bool
	// block makes the connection's reads wait in a blocking receive
	// (kstamp's EnableBlock): the run's only worker runs on the schedule's
	// own goroutine, with another P beside it.
	block bool
}

func withStamps(ctx context.Context, s *stamps) context.Context {
	return context.WithValue(ctx, stampsKey{}, s)
}

func contextStamps(ctx context.Context) *stamps {
	s, _ := ctx.Value(stampsKey{}).(*stamps)
	return s
}

// conn is one RESP connection. It is not safe for concurrent use.
type conn struct {
	nc      net.Conn
	addr    string
	bufs    *connBufs // br, rd and wbuf's backing, returned to pool
	br      *bufio.Reader
	rd      *resp.Reader
	wbuf    []byte
	timeout time.Duration
	broken  bool
	pool    *readerPool
	// kr, once an open-loop request has used the connection, reads it in
	// the kernel with receive timestamps (kstamp); kernelTried records
	// that it was tried, since a TLS connection cannot.
	kr          *kstamp.Reader
	kernelTried bool
	// block: kr blocks in its receives and keeps the deadline
	// (kstamp's EnableBlock).
	block bool
	// kv holds the connection's transmit stamps (kview.go).
	kv *connKernel
	// stop unregisters the close-on-cancel hook of the context the
	// connection was dialled with.
	stop func() bool
}

// readerPool recycles the buffers of closed connections (read buffer, reply
// reader, command buffer): connect-per-operation runs open thousands of
// connections per second. Each dialer has one.
type readerPool struct{ p sync.Pool }

// maxPooledCommand bounds the command buffer a closed connection leaves for
// the next.
const maxPooledCommand = 64 << 10

// connBufs are the buffers of one connection.
type connBufs struct {
	br   *bufio.Reader
	rd   *resp.Reader
	wbuf []byte
}

func (rp *readerPool) get(r io.Reader) *connBufs {
	if b, ok := rp.p.Get().(*connBufs); ok {
		b.br.Reset(r)
		return b
	}
	br := bufio.NewReader(r)
	return &connBufs{br: br, rd: resp.NewReader(br, resp.DefaultLimits), wbuf: make([]byte, 0, 128)}
}

func (rp *readerPool) put(b *connBufs) {
	b.br.Reset(nil)
	b.wbuf = b.wbuf[:0]
	if cap(b.wbuf) > maxPooledCommand {
		b.wbuf = nil // a large SET's: not kept for the next connection
	}
	rp.p.Put(b)
}

// newConn wraps nc. stop unregisters the hook that closes nc when the dial
// context ends (nil when there is none).
func newConn(nc net.Conn, addr string, timeout time.Duration, pool *readerPool, stop func() bool) *conn {
	b := pool.get(nc)
	return &conn{nc: nc, addr: addr, bufs: b, br: b.br, rd: b.rd, wbuf: b.wbuf, timeout: timeout, pool: pool, stop: stop}
}

// release closes the connection and recycles its read buffer. The conn must
// not be used afterwards.
func (c *conn) release() error {
	if c.stop != nil {
		c.stop()
	}
	err := c.nc.Close()
	if c.bufs != nil {
		c.bufs.wbuf = c.wbuf // keeps what it grew to
		c.pool.put(c.bufs)
		c.bufs, c.br, c.rd, c.wbuf = nil, nil, nil, nil
	}
	return err
}

// roundTrip writes one command and reads its reply, both by deadline. An error
// reply is returned as a value, not an error; a transport or protocol error
// marks the connection broken.
//
// With st (an open-loop request), the reply is read in the kernel
// (kstamp) and st receives the send and the reply's kernel arrival.
func (c *conn) roundTrip(deadline time.Time, args []string, st *stamps) (resp.Value, error) {
	if st != nil && !c.kernelTried {
		c.useKernel(st.block)
		c.enableTX(st)
	}
	if c.block {
		c.kr.SetDeadline(deadline)
	} else if err := c.nc.SetDeadline(deadline); err != nil {
		c.broken = true
		return resp.Value{}, err
	}
	c.wbuf = resp.AppendCommand(c.wbuf[:0], args...)
	// The request leaves when the write starts: over loopback the write
	// itself carries it to the server, which may answer before it returns.
	if st != nil && st.sent != nil && st.sent.IsZero() {
		*st.sent = time.Now()
	}
	if err := c.write(st); err != nil {
		c.broken = true
		return resp.Value{}, err
	}
	if st != nil && st.left != nil && st.left.IsZero() {
		*st.left = time.Now()
	}
	for {
		v, err := c.rd.Read()
		if err != nil {
			c.broken = true
			return resp.Value{}, err
		}
		if v.Type == resp.Push { // RESP3 out-of-band data: not a reply
			continue
		}
		if st != nil && st.arrived != nil && c.kr != nil {
			*st.arrived = c.kr.Arrived()
		}
		c.replyTX(st)
		return v, nil
	}
}

// useKernel switches the connection's reads to kstamp, between replies
// (nothing is buffered then), when its socket allows.
//
// With block, its reads wait in a blocking receive, as a plain blocking
// client's do, when the socket allows (kstamp's EnableBlock); otherwise in
// the netpoller. A read that waits in poll(2) on its thread lets Go hand
// the thread's P to another thread, woken on the CPU the server needs:
// over loopback on two cores the server's reply took 90 us instead of 37
// (kernel view, docs/benchmarks.md, issue 31).
func (c *conn) useKernel(block bool) {
	c.kernelTried = true
	if c.br == nil || c.br.Buffered() > 0 {
		return
	}
	if kr, ok := kstamp.New(c.nc); ok {
		// A blocking reader keeps the deadline itself: the
		// connection's, kept on the runtime's timers, would cost every
		// request their upkeep.
		if c.block = block && kr.EnableBlock() == nil; c.block {
			_ = c.nc.SetDeadline(time.Time{}) // fails only once closed, as the next request will
		}
		kr.Netpoller = !c.block
		c.kr = kr
		c.br.Reset(kr)
	}
}

// do runs a command in phase p with the request timeout (shortened by ctx's
// deadline), calling the trace hooks of ctx. An error reply becomes a
// *replyError; every error is classified. The connection is closed when the
// context it was dialled with ends, which interrupts a command in flight.
func (c *conn) do(ctx context.Context, p Phase, args ...string) (resp.Value, error) {
	trace := contextClientTrace(ctx)
	start := time.Now()
	trace.start(PhaseInfo{Phase: p, Addr: c.addr, Start: start})
	deadline := start.Add(c.timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	var (
		v   resp.Value
		err error
	)
	if err = ctx.Err(); err == nil {
		v, err = c.roundTrip(deadline, args, contextStamps(ctx))
		if err == nil && v.IsError() {
			err = &replyError{Msg: v.Text()}
		}
		err = ctxCause(ctx, err)
	}
	if trace != nil {
		trace.done(PhaseInfo{Phase: p, Addr: c.addr, Start: start, Duration: time.Since(start), Err: err})
	}
	return v, classify(p, c.addr, err)
}

// ctxCause returns ctx's error in place of err when ctx has ended: a
// connection closed because its context ended failed because of the context,
// not because of the endpoint. A timeout at or after ctx's deadline is the
// deadline's doing too, even before ctx reports it: the set-up phases put
// ctx's deadline on the socket (or a derived context), so they can time out
// an instant before ctx's own timer fires, and the caller must still see
// context.DeadlineExceeded.
func ctxCause(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) && isTimeout(err) {
		return context.DeadlineExceeded
	}
	return err
}

// close closes the connection, reporting the close phase to the trace in ctx.
func (c *conn) close(ctx context.Context) error {
	trace := contextClientTrace(ctx)
	start := time.Now()
	trace.start(PhaseInfo{Phase: PhaseClose, Addr: c.addr, Start: start})
	// A TLS close writes close_notify: bound it.
	_ = c.nc.SetWriteDeadline(start.Add(c.timeout))
	err := c.release()
	trace.done(PhaseInfo{Phase: PhaseClose, Addr: c.addr, Start: start, Duration: time.Since(start), Err: err})
	return err
}
