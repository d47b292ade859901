package cache

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/netperfkit/netperfkit/internal/resp"
)

// numSlots is the number of hash slots of a Valkey/Redis cluster.
const numSlots = 16384

// errSlots is wrapped by malformed CLUSTER SLOTS replies.
var errSlots = errors.New("cache: bad CLUSTER SLOTS reply")

// slotRange is one entry of a CLUSTER SLOTS reply: slots lo..hi served by
// the primary at addr.
type slotRange struct {
	lo, hi int
	addr   string
}

// parseSlotRanges reads a CLUSTER SLOTS reply. seedHost replaces an empty or
// "?" primary host, which servers send when they do not know their own
// address.
func parseSlotRanges(v resp.Value, seedHost string) ([]slotRange, error) {
	if v.Type != resp.Array || v.Null {
		return nil, fmt.Errorf("%w: not an array", errSlots)
	}
	ranges := make([]slotRange, 0, len(v.Elems))
	for _, r := range v.Elems {
		if len(r.Elems) < 3 || r.Elems[0].Type != resp.Integer || r.Elems[1].Type != resp.Integer {
			return nil, fmt.Errorf("%w: range entry too short", errSlots)
		}
		lo, hi := r.Elems[0].Num, r.Elems[1].Num
		if lo < 0 || hi >= numSlots || lo > hi {
			return nil, fmt.Errorf("%w: slot range %d-%d", errSlots, lo, hi)
		}
		node := r.Elems[2]
		if len(node.Elems) < 2 || node.Elems[1].Type != resp.Integer {
			return nil, fmt.Errorf("%w: node entry", errSlots)
		}
		host := node.Elems[0].Text()
		if host == "" || host == "?" {
			host = seedHost
		}
		ranges = append(ranges, slotRange{int(lo), int(hi), net.JoinHostPort(host, strconv.FormatInt(node.Elems[1].Num, 10))})
	}
	if len(ranges) == 0 {
		return nil, fmt.Errorf("%w: no slot is served", errSlots)
	}
	return ranges, nil
}

// clusterSlots runs CLUSTER SLOTS on c and parses the reply; a primary
// without a known host is taken to be on c's host. A malformed reply is an
// ErrCluster error of the cluster-slots phase.
func (c *conn) clusterSlots(ctx context.Context) ([]slotRange, error) {
	start := time.Now()
	v, err := c.do(ctx, PhaseClusterSlots, "CLUSTER", "SLOTS")
	if err != nil {
		return nil, err
	}
	contextNotes(ctx).overran(causeSlots, time.Since(start), 1)
	host, _, _ := net.SplitHostPort(c.addr)
	ranges, err := parseSlotRanges(v, host)
	if err != nil {
		return nil, &Error{Phase: PhaseClusterSlots, Kind: ErrCluster, Addr: c.addr, Err: err}
	}
	return ranges, nil
}

// slotMap maps hash slots to their primaries' addresses: the CLUSTER SLOTS
// ranges, sorted and disjoint, and the slots MOVED replies have reassigned
// since. A slot nothing covers maps to "". Not safe for concurrent use.
type slotMap struct {
	ranges []slotRange
	moved  map[int]string
}

// newSlotMap builds a slot map from CLUSTER SLOTS ranges. Where ranges
// overlap (no server sends that), the later one wins.
func newSlotMap(ranges []slotRange) *slotMap {
	rs := slices.Clone(ranges)
	slices.SortStableFunc(rs, func(a, b slotRange) int { return a.lo - b.lo })
	for i := 1; i < len(rs); i++ {
		if rs[i].lo <= rs[i-1].hi {
			rs = disjoint(ranges)
			break
		}
	}
	return &slotMap{ranges: rs}
}

// disjoint returns ranges sorted and cut so that no two overlap, each slot
// keeping the address of the last range that covers it.
func disjoint(ranges []slotRange) []slotRange {
	var out []slotRange
	for _, r := range ranges {
		next := make([]slotRange, 0, len(out)+2)
		for _, o := range out {
			if o.hi < r.lo || o.lo > r.hi {
				next = append(next, o)
				continue
			}
			if o.lo < r.lo {
				next = append(next, slotRange{o.lo, r.lo - 1, o.addr})
			}
			if o.hi > r.hi {
				next = append(next, slotRange{r.hi + 1, o.hi, o.addr})
			}
		}
		out = append(next, r)
	}
	slices.SortFunc(out, func(a, b slotRange) int { return a.lo - b.lo })
	return out
}

// addr returns the address of slot's primary, "" when no range covers it.
func (m *slotMap) addr(slot int) string {
	if a, ok := m.moved[slot]; ok {
		return a
	}
	i, _ := slices.BinarySearchFunc(m.ranges, slot, func(r slotRange, s int) int { return r.hi - s })
	if i < len(m.ranges) && m.ranges[i].lo <= slot {
		return m.ranges[i].addr
	}
	return ""
}

// set records that slot is now served by addr (a MOVED redirect).
func (m *slotMap) set(slot int, addr string) {
	if m.moved == nil {
		m.moved = map[int]string{}
	}
	m.moved[slot] = addr
}

// keySlot returns the hash slot of key, honouring {hash tags}.
func keySlot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return int(crc16(key) % numSlots)
}

// crc16 is CRC-16/XMODEM (polynomial 0x1021), the cluster's key hash.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for b := 0; b < 8; b++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// parseRedirect parses "MOVED 3999 127.0.0.1:6381" or "ASK ..." sent by
// the node at from. An empty or "?" host, which a server sends when it does
// not know the target's address (Redis 7 with
// cluster-preferred-endpoint-type unknown-endpoint replies
// "MOVED 12182 :44509"), is taken to be from's host, as parseSlotRanges
// does for CLUSTER SLOTS.
func parseRedirect(msg, from string) (ask bool, slot int, addr string, ok bool) {
	f := strings.Fields(msg)
	if len(f) != 3 || (f[0] != "MOVED" && f[0] != "ASK") {
		return false, 0, "", false
	}
	n, err := strconv.Atoi(f[1])
	if err != nil || n < 0 || n >= numSlots {
		return false, 0, "", false
	}
	host, port, err := net.SplitHostPort(f[2])
	if err != nil || port == "" {
		return false, 0, "", false
	}
	if host == "" || host == "?" {
		if host, _, err = net.SplitHostPort(from); err != nil {
			return false, 0, "", false
		}
	}
	return f[0] == "ASK", n, net.JoinHostPort(host, port), true
}

var errTooManyRedirects = errors.New("cache: too many MOVED/ASK redirects")
