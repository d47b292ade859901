package cache

import (
	"context"
	"errors"
)

// respEngine creates lean RESP clients over the prober's dialer.
type respEngine struct {
	d *dialer
}

func (e *respEngine) newClient(ctx context.Context) (Client, error) {
	c := &respClient{d: e.d, conns: map[string]*conn{}}
	if err := c.connect(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// respClient is one client: a connection (standalone) or one connection per
// node in use (cluster), routed by CLUSTER SLOTS and corrected by MOVED and
// ASK. A broken connection is replaced on the next operation. Not safe for
// concurrent use.
type respClient struct {
	d     *dialer
	slots *slotMap
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
	if cn := c.conns[addr]; cn != nil && !cn.broken {
		return cn, nil
	} else if cn != nil {
		c.drop(cn)
	}
	cn, err := c.d.dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	c.conns[addr] = cn
	return cn, nil
}

func (c *respClient) drop(cn *conn) {
	if c.conns[cn.addr] == cn {
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

// do sends a keyed command to the node owning key, following redirects.
func (c *respClient) do(ctx context.Context, key string, args ...string) error {
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
	for _, cn := range c.conns {
		_ = cn.release()
	}
	clear(c.conns)
}
