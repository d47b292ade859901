package cache

import (
	"context"
	"errors"
)

// do sends a keyed command (send) and, on a cluster, sends it once more
// when it failed in a way a failover causes: a timeout or broken
// connection (a primary that stopped), or CLUSTERDOWN/TRYAGAIN (the
// cluster between detecting the failure and promoting a replica). It first
// reloads the slot map from another node, and sends again when that map
// routes the key elsewhere (the replica was promoted) or the cluster said
// CLUSTERDOWN/TRYAGAIN; otherwise the operation is lost with its first
// error. A resend is counted in RunResult.Retried.
func (c *respClient) do(ctx context.Context, key string, args ...string) error {
	err := c.send(ctx, key, args...)
	if err == nil || c.slots == nil || ctx.Err() != nil {
		return err
	}
	down := clusterDown(err)
	var ce *Error
	if !errors.As(err, &ce) || (!down && !failoverKind(ce.Kind)) {
		return err
	}
	slot := keySlot(key)
	if !c.reloadSlots(ctx, ce.Addr) || (!down && c.slots.addr(slot) == ce.Addr) {
		return err
	}
	countRetry(ctx)
	return c.send(ctx, key, args...)
}

// failoverKind reports whether k is how an operation fails on a primary
// that stopped answering or went away.
func failoverKind(k ErrorKind) bool {
	switch k {
	case ErrTimeout, ErrConnection, ErrConnectRefused, ErrConnectTimeout, ErrConnect:
		return true
	}
	return false
}

// clusterDown reports whether err is a CLUSTERDOWN or TRYAGAIN reply.
func clusterDown(err error) bool {
	var re *replyError
	if !errors.As(err, &re) {
		return false
	}
	code := re.code()
	return code == "CLUSTERDOWN" || code == "TRYAGAIN"
}

// reloadSlots replaces the slot map with CLUSTER SLOTS from the first node
// that answers, the seed first, never the one at avoid (which just
// failed). It reports whether one answered.
func (c *respClient) reloadSlots(ctx context.Context, avoid string) bool {
	addrs := []string{c.d.ep.Addr}
	for _, r := range c.slots.ranges {
		addrs = append(addrs, r.addr)
	}
	for _, a := range c.slots.moved {
		addrs = append(addrs, a)
	}
	tried := map[string]bool{avoid: true}
	for _, a := range addrs {
		if tried[a] || ctx.Err() != nil {
			continue
		}
		tried[a] = true
		cn, err := c.conn(ctx, a)
		if err != nil {
			continue
		}
		ranges, err := cn.clusterSlots(ctx)
		if err != nil {
			if cn.broken {
				c.drop(cn)
			}
			continue
		}
		c.slots = newSlotMap(ranges)
		return true
	}
	return false
}
