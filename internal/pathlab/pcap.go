package pathlab

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// IP protocol numbers of the packets a capture keeps.
const (
	TCP = 6
	UDP = 17
)

// pcapMagic is a little-endian pcap with nanosecond stamps, as tcpdump
// writes with --time-stamp-precision=nano on amd64 and arm64.
const pcapMagic = 0xa1b23c4d

// maxSnap is tcpdump's largest snap length: no record it writes is longer,
// and a longer one in a damaged file is not allocated.
const maxSnap = 262144

// Packet is one captured IPv4 UDP or TCP packet that carries data.
type Packet struct {
	// TS is the capture's stamp, in nanoseconds since the epoch.
	TS int64
	// Proto is TCP or UDP.
	Proto uint8
	// Src and Dst are the ports.
	Src, Dst uint16
	// Payload is the data above UDP or TCP, as far as the snap length kept
	// it.
	Payload []byte
}

// ReadPcap reads a little-endian nanosecond pcap of an Ethernet device (a
// veth) and returns its IPv4 UDP and TCP packets that carry data, in file
// order; other frames (ARP, IPv6, bare ACKs) are left out.
func ReadPcap(r io.Reader) ([]Packet, error) {
	var gh [24]byte
	if _, err := io.ReadFull(r, gh[:]); err != nil {
		return nil, fmt.Errorf("pathlab: pcap header: %w", err)
	}
	if binary.LittleEndian.Uint32(gh[:4]) != pcapMagic {
		return nil, errors.New("pathlab: not a little-endian nanosecond pcap")
	}
	if lt := binary.LittleEndian.Uint32(gh[20:24]); lt != 1 {
		return nil, fmt.Errorf("pathlab: pcap link type %d, not Ethernet", lt)
	}
	var out []Packet
	for {
		var ph [16]byte
		if _, err := io.ReadFull(r, ph[:]); err == io.EOF {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("pathlab: pcap record: %w", err)
		}
		n := binary.LittleEndian.Uint32(ph[8:12])
		if n > maxSnap {
			return nil, fmt.Errorf("pathlab: pcap record of %d bytes, over any snap length (%d)", n, maxSnap)
		}
		ts := int64(binary.LittleEndian.Uint32(ph[0:4]))*1e9 + int64(binary.LittleEndian.Uint32(ph[4:8]))
		b := make([]byte, n)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, fmt.Errorf("pathlab: pcap data: %w", err)
		}
		if p, ok := decodeFrame(b, ts); ok {
			out = append(out, p)
		}
	}
}

// decodeFrame finds the ports and payload of an Ethernet frame (IPv4, UDP
// or TCP); frames without data are not wanted.
func decodeFrame(b []byte, ts int64) (Packet, bool) {
	if len(b) < 14+20 || binary.BigEndian.Uint16(b[12:14]) != 0x0800 {
		return Packet{}, false
	}
	ip := b[14:]
	ihl, total := int(ip[0]&0xf)*4, int(binary.BigEndian.Uint16(ip[2:4]))
	if ihl < 20 || total < ihl || len(ip) < ihl+8 {
		return Packet{}, false
	}
	ip = ip[:min(total, len(ip))]
	if len(ip) < ihl+8 {
		return Packet{}, false
	}
	l4 := ip[ihl:]
	p := Packet{TS: ts, Proto: ip[9], Src: binary.BigEndian.Uint16(l4[0:2]), Dst: binary.BigEndian.Uint16(l4[2:4])}
	switch p.Proto {
	case UDP:
		p.Payload = l4[8:]
	case TCP:
		// A TCP header cut short by the snap length or the IP total length
		// (a fuzzed file found the copy in kstamp's test reading past it).
		if len(l4) < 20 {
			return Packet{}, false
		}
		off := int(l4[12]>>4) * 4
		if off < 20 || len(l4) < off {
			return Packet{}, false
		}
		p.Payload = l4[off:]
	default:
		return Packet{}, false
	}
	return p, len(p.Payload) > 0
}

// PcapFile is a pcap that ReadPcap reads back as pkts (those with a payload,
// UDP or TCP): each packet framed in Ethernet and a 20-byte IPv4 header, for
// tests of code that reads captures.
func PcapFile(pkts []Packet) []byte {
	gh := make([]byte, 24, 24+len(pkts)*80)
	binary.LittleEndian.PutUint32(gh, pcapMagic)
	binary.LittleEndian.PutUint16(gh[4:], 2)
	binary.LittleEndian.PutUint16(gh[6:], 4)
	binary.LittleEndian.PutUint32(gh[16:], maxSnap)
	binary.LittleEndian.PutUint32(gh[20:], 1)
	out := gh
	for _, p := range pkts {
		l4 := 8
		if p.Proto == TCP {
			l4 = 20
		}
		b := make([]byte, 14+20+l4+len(p.Payload))
		binary.BigEndian.PutUint16(b[12:], 0x0800)
		b[14], b[14+9] = 0x45, p.Proto
		binary.BigEndian.PutUint16(b[16:], uint16(20+l4+len(p.Payload)))
		binary.BigEndian.PutUint16(b[34:], p.Src)
		binary.BigEndian.PutUint16(b[36:], p.Dst)
		if p.Proto == TCP {
			b[34+12] = 5 << 4
		} else {
			binary.BigEndian.PutUint16(b[38:], uint16(8+len(p.Payload)))
		}
		copy(b[34+l4:], p.Payload)
		var ph [16]byte
		binary.LittleEndian.PutUint32(ph[0:], uint32(p.TS/1e9))
		binary.LittleEndian.PutUint32(ph[4:], uint32(p.TS%1e9))
		binary.LittleEndian.PutUint32(ph[8:], uint32(len(b)))
		binary.LittleEndian.PutUint32(ph[12:], uint32(len(b)))
		out = append(append(out, ph[:]...), b...)
	}
	return out
}
