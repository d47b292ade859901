package cache

import (
	"bufio"
	"context"
	"io"
	"net"
	"sync"
	"time"
)

// conn is one RESP connection. It is not safe for concurrent use.
type conn struct {
	nc      net.Conn
	addr    string
	rd      *respReader
	wbuf    []byte
	timeout time.Duration
	broken  bool
	pool    *readerPool
}

// readerPool recycles the read buffers of closed connections: connect-per-
// operation runs open thousands of connections per second. Each dialer has
// one.
type readerPool struct{ p sync.Pool }

func (rp *readerPool) get(r io.Reader) *bufio.Reader {
	if br, ok := rp.p.Get().(*bufio.Reader); ok {
		br.Reset(r)
		return br
	}
	return bufio.NewReader(r)
}

func (rp *readerPool) put(br *bufio.Reader) {
	br.Reset(nil)
	rp.p.Put(br)
}

func newConn(nc net.Conn, addr string, timeout time.Duration, lim respLimits, pool *readerPool) *conn {
	return &conn{nc: nc, addr: addr, rd: &respReader{br: pool.get(nc), lim: lim}, timeout: timeout, pool: pool}
}

// release closes the connection and recycles its read buffer. The conn must
// not be used afterwards.
func (c *conn) release() error {
	err := c.nc.Close()
	if c.rd != nil {
		c.pool.put(c.rd.br)
		c.rd = nil
	}
	return err
}

// roundTrip writes one command and reads its reply, both by deadline. An error
// reply is returned as a value, not an error; a transport or protocol error
// marks the connection broken.
func (c *conn) roundTrip(deadline time.Time, args []string) (value, error) {
	if err := c.nc.SetDeadline(deadline); err != nil {
		c.broken = true
		return value{}, err
	}
	c.wbuf = appendCommand(c.wbuf[:0], args...)
	if _, err := c.nc.Write(c.wbuf); err != nil {
		c.broken = true
		return value{}, err
	}
	for {
		v, err := c.rd.read()
		if err != nil {
			c.broken = true
			return value{}, err
		}
		if v.typ == respPush { // RESP3 out-of-band data: not a reply
			continue
		}
		return v, nil
	}
}

// do runs a command in phase p with the request timeout (shortened by ctx's
// deadline), calling the trace hooks of ctx. An error reply becomes a
// *ServerError; every error is classified.
func (c *conn) do(ctx context.Context, p Phase, args ...string) (value, error) {
	startHook, doneHook := ContextClientTrace(ctx).commandHooks(p)
	start := time.Now()
	if startHook != nil {
		startHook(PhaseStart{Phase: p, Addr: c.addr, Command: args[0], Start: start})
	}
	deadline := start.Add(c.timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	var (
		v   value
		err error
	)
	if err = ctx.Err(); err == nil {
		v, err = c.roundTrip(deadline, args)
		if err == nil && v.isError() {
			err = &ServerError{Msg: v.text()}
		}
	}
	if doneHook != nil {
		doneHook(PhaseDone{Phase: p, Addr: c.addr, Command: args[0], Start: start, Duration: time.Since(start), Err: err})
	}
	return v, classify(p, c.addr, err)
}

// close closes the connection, reporting the close phase to the trace in ctx.
func (c *conn) close(ctx context.Context) error {
	trace := ContextClientTrace(ctx)
	start := time.Now()
	if trace != nil && trace.CloseStart != nil {
		trace.CloseStart(PhaseStart{Phase: PhaseClose, Addr: c.addr, Start: start})
	}
	// A TLS close writes close_notify: bound it.
	_ = c.nc.SetWriteDeadline(start.Add(c.timeout))
	err := c.release()
	if trace != nil && trace.CloseDone != nil {
		trace.CloseDone(PhaseDone{Phase: PhaseClose, Addr: c.addr, Start: start, Duration: time.Since(start), Err: err})
	}
	return err
}
