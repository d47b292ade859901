package iperfwire

import (
	"encoding/binary"
	"fmt"
)

// UDP datagram lengths iperf3 accepts.
const (
	MinUDPLen = 16
	MaxUDPLen = 65507
)

// The UDP stream hello and its reply. 3.12+ writes these in host order
// (bytes "9876" on little-endian); older versions the legacy numbers.
const (
	ConnectMsg         = 0x36373839
	ConnectReply       = 0x39383736
	legacyConnectMsg   = 123456789
	legacyConnectReply = 987654321
)

// Hello returns the datagram a client sends to open a UDP stream.
func Hello() []byte {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], ConnectMsg)
	return b[:]
}

// HelloReply returns the datagram a server answers a hello with.
func HelloReply() []byte {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], ConnectReply)
	return b[:]
}

// IsConnectReply reports whether b is a server's hello reply, in either byte order.
func IsConnectReply(b []byte) bool {
	return isOneOf(b, ConnectReply, legacyConnectReply)
}

// IsConnectMsg reports whether b is a client's hello, in either byte order.
func IsConnectMsg(b []byte) bool {
	return isOneOf(b, ConnectMsg, legacyConnectMsg)
}

func isOneOf(b []byte, v, legacy uint32) bool {
	if len(b) != 4 {
		return false
	}
	le, be := binary.LittleEndian.Uint32(b), binary.BigEndian.Uint32(b)
	return le == v || be == v || le == legacy || be == legacy
}

// UDPHeader is the header iperf3 puts at the front of every UDP datagram.
type UDPHeader struct {
	Sec, Usec uint32
	Count     uint64
}

// UDPHeaderLen returns the header length for 32- or 64-bit counters.
func UDPHeaderLen(counters64 bool) int {
	if counters64 {
		return 16
	}
	return 12
}

// PutUDPHeader writes h at the front of b, which holds UDPHeaderLen bytes.
func PutUDPHeader(b []byte, h UDPHeader, counters64 bool) {
	binary.BigEndian.PutUint32(b[0:4], h.Sec)
	binary.BigEndian.PutUint32(b[4:8], h.Usec)
	if counters64 {
		binary.BigEndian.PutUint64(b[8:16], h.Count)
	} else {
		binary.BigEndian.PutUint32(b[8:12], uint32(h.Count))
	}
}

// ParseUDPHeader reads the header at the front of a datagram.
func ParseUDPHeader(b []byte, counters64 bool) (UDPHeader, error) {
	if len(b) < UDPHeaderLen(counters64) {
		return UDPHeader{}, fmt.Errorf("%w: udp datagram of %d bytes", ErrProtocol, len(b))
	}
	h := UDPHeader{Sec: binary.BigEndian.Uint32(b[0:4]), Usec: binary.BigEndian.Uint32(b[4:8])}
	if counters64 {
		h.Count = binary.BigEndian.Uint64(b[8:16])
	} else {
		h.Count = uint64(binary.BigEndian.Uint32(b[8:12]))
	}
	return h, nil
}
