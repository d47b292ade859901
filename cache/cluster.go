package cache

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// numSlots is the number of hash slots of a Valkey/Redis cluster.
const numSlots = 16384

// errSlots is wrapped by malformed CLUSTER SLOTS replies.
var errSlots = errors.New("cache: bad CLUSTER SLOTS reply")

// slotMap maps each hash slot to its primary's address.
type slotMap [numSlots]string

// slotRange is one entry of a CLUSTER SLOTS reply: slots lo..hi served by
// the primary at addr.
type slotRange struct {
	lo, hi int
	addr   string
}

// parseSlotRanges reads a CLUSTER SLOTS reply. seedHost replaces an empty or
// "?" primary host, which servers send when they do not know their own
// address.
func parseSlotRanges(v value, seedHost string) ([]slotRange, error) {
	if v.typ != respArray || v.null {
		return nil, fmt.Errorf("%w: not an array", errSlots)
	}
	ranges := make([]slotRange, 0, len(v.elems))
	for _, r := range v.elems {
		if len(r.elems) < 3 || r.elems[0].typ != respInteger || r.elems[1].typ != respInteger {
			return nil, fmt.Errorf("%w: range entry too short", errSlots)
		}
		lo, hi := r.elems[0].num, r.elems[1].num
		if lo < 0 || hi >= numSlots || lo > hi {
			return nil, fmt.Errorf("%w: slot range %d-%d", errSlots, lo, hi)
		}
		node := r.elems[2]
		if len(node.elems) < 2 || node.elems[1].typ != respInteger {
			return nil, fmt.Errorf("%w: node entry", errSlots)
		}
		host := node.elems[0].text()
		if host == "" || host == "?" {
			host = seedHost
		}
		ranges = append(ranges, slotRange{int(lo), int(hi), net.JoinHostPort(host, strconv.FormatInt(node.elems[1].num, 10))})
	}
	if len(ranges) == 0 {
		return nil, fmt.Errorf("%w: no slot is served", errSlots)
	}
	return ranges, nil
}

// parseSlots reads a CLUSTER SLOTS reply into a slot map. Slots no range
// covers are left empty.
func parseSlots(v value, seedHost string) (*slotMap, error) {
	ranges, err := parseSlotRanges(v, seedHost)
	if err != nil {
		return nil, err
	}
	var m slotMap
	for _, r := range ranges {
		for s := r.lo; s <= r.hi; s++ {
			m[s] = r.addr
		}
	}
	return &m, nil
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

// parseRedirect parses "MOVED 3999 127.0.0.1:6381" or "ASK ...".
func parseRedirect(msg string) (ask bool, slot int, addr string, ok bool) {
	f := strings.Fields(msg)
	if len(f) != 3 || (f[0] != "MOVED" && f[0] != "ASK") {
		return false, 0, "", false
	}
	n, err := strconv.Atoi(f[1])
	if err != nil || n < 0 || n >= numSlots {
		return false, 0, "", false
	}
	return f[0] == "ASK", n, f[2], true
}

var errTooManyRedirects = errors.New("cache: too many MOVED/ASK redirects")

func asServerError(err error, se **ServerError) bool { return errors.As(err, se) }
