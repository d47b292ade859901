package cache

import (
	"context"
	"errors"
	"time"
)

// respEngine creates lean RESP clients over the prober's dialer.
type respEngine struct {
	d *dialer
	// raw is the endpoint's address in a connect-per-operation run, when
	// it is an IP literal reached over plain TCP on linux: the engine
	// connects to it with a socket of its own (dialraw_linux.go), which
	// costs such a run less than net.Dialer. Nil: every connection goes
	// through d.dial, as pooled runs' do, whose kernel view needs a
	// *net.TCPConn (kstamp.EnableTX).
	raw *rawAddr
}

func (e *respEngine) newClient(ctx context.Context) (Client, error) {
	c := &respClient{e: e, d: e.d}
	if e.d.ep.Cluster {
		c.conns = map[string]*conn{}
	}
	if err := c.connect(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// dial sets up a connection to addr: through the engine's own socket when
// addr is the endpoint's IP literal over plain TCP, else d.dial. Both
// report the same phases to the trace in ctx and fail with the same
// errors.
func (e *respEngine) dial(ctx context.Context, addr string) (*conn, error) {
	if e.raw == nil || addr != e.raw.addr {
		return e.d.dial(ctx, addr)
	}
	start := time.Now()
	deadline := start.Add(e.d.ep.ConnectTimeout)
	if cd, ok := ctx.Deadline(); ok && cd.Before(deadline) {
		deadline = cd
	}
	trace := contextClientTrace(ctx)
	trace.start(PhaseInfo{Phase: PhaseConnect, Addr: addr, Start: start})
	nc, stop, err := e.raw.dial(ctx, deadline)
	err = ctxCause(ctx, err)
	took := time.Since(start)
	if trace != nil {
		trace.done(PhaseInfo{Phase: PhaseConnect, Addr: addr, Start: start, Duration: took, Err: err})
	}
	if err != nil {
		return nil, classify(PhaseConnect, addr, err)
	}
	contextNotes(ctx).connected(nc, took)
	c := newConn(nc, addr, e.d.ep.RequestTimeout, &e.d.readers, stop)
	if e.d.ep.Credentials != nil || e.d.ep.Password != "" {
		if err := e.d.auth(ctx, c, deadline); err != nil {
			_ = c.release()
			return nil, err
		}
	}
	return c, nil
}

// respClient is one client: a connection (standalone) or one connection per
// node in use (cluster), routed by CLUSTER SLOTS and corrected by MOVED and
// ASK. A broken connection is replaced on the next operation. Not safe for
// concurrent use.
type respClient struct {
	e     *respEngine
	d     *dialer
	slots *slotMap
	// one is the standalone client's connection; conns holds a cluster
	// client's, by node address (nil standalone: a map per client is
	// what a connect-per-operation run would pay for nothing).
	one   *conn
	conns map[string]*conn
}

// maxRedirects bounds MOVED/ASK chasing for one operation.
const maxRedirects = 5

// connect dials the seed node and, in cluster mode, loads the slot map.
func (c *respClient) connect(ctx context.Context) error {
	seed, err := c.conn(ctx, c.d.ep.Addr)
	if err != nil {
		return err
	}
	if c.d.ep.Cluster {
		return c.refreshSlots(ctx, seed)
	}
	return nil
}

func (c *respClient) refreshSlots(ctx context.Context, cn *conn) error {
	ranges, err := cn.clusterSlots(ctx)
	if err != nil {
		c.drop(cn)
		return err
	}
	c.slots = newSlotMap(ranges)
	return nil
}

// conn returns a live connection to addr, dialling one if needed.
func (c *respClient) conn(ctx context.Context, addr string) (*conn, error) {
	cn := c.one
	if c.conns != nil {
		cn = c.conns[addr]
	}
	if cn != nil && !cn.broken {
		return cn, nil
	} else if cn != nil {
		c.drop(cn)
	}
	cn, err := c.e.dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	if c.conns != nil {
		c.conns[addr] = cn
	} else {
		c.one = cn
	}
	return cn, nil
}

func (c *respClient) drop(cn *conn) {
	if c.one == cn {
		c.one = nil
	} else if c.conns[cn.addr] == cn {
		delete(c.conns, cn.addr)
	}
	_ = cn.release()
}

// Get runs GET key.
func (c *respClient) Get(ctx context.Context, key string) error {
	return c.do(ctx, key, "GET", key)
}

// Set runs SET key value.
func (c *respClient) Set(ctx context.Context, key, value string) error {
	return c.do(ctx, key, "SET", key, value)
}

// send sends a keyed command to the node owning key, following
// redirects; do (retry.go) calls it.
func (c *respClient) send(ctx context.Context, key string, args ...string) error {
	addr := c.d.ep.Addr
	if c.slots != nil {
		if a := c.slots.addr(keySlot(key)); a != "" {
			addr = a
		}
	}
	ask := false
	for range maxRedirects {
		cn, err := c.conn(ctx, addr)
		if err != nil {
			return err
		}
		if ask {
			if _, err := cn.do(ctx, PhaseCommand, "ASKING"); err != nil {
				return err
			}
		}
		_, err = cn.do(ctx, PhaseCommand, args...)
		if err == nil {
			return nil
		}
		if cn.broken {
			c.drop(cn)
			return err
		}
		var se *replyError
		if !errors.As(err, &se) || c.slots == nil {
			return err
		}
		isAsk, slot, to, ok := parseRedirect(se.Msg, cn.addr)
		if !ok {
			return err
		}
		if !isAsk {
			c.slots.set(slot, to)
		}
		addr, ask = to, isAsk
	}
	return &Error{Phase: PhaseCommand, Kind: ErrCluster, Addr: addr, Err: errTooManyRedirects}
}

// Close closes every connection of the client.
func (c *respClient) Close() {
	if c.one != nil {
		_ = c.one.release()
		c.one = nil
	}
	for _, cn := range c.conns {
		_ = cn.release()
	}
	clear(c.conns)
}
