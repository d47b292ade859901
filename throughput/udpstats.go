package throughput

import (
	"encoding/binary"
	"fmt"
)

// udpHeader is the header iperf3 puts at the front of every UDP datagram.
type udpHeader struct {
	Sec, Usec uint32
	Count     uint64
}

// udpHeaderLen returns the header length for 32- or 64-bit counters.
func udpHeaderLen(counters64 bool) int {
	if counters64 {
		return 16
	}
	return 12
}

func putUDPHeader(b []byte, h udpHeader, counters64 bool) {
	binary.BigEndian.PutUint32(b[0:4], h.Sec)
	binary.BigEndian.PutUint32(b[4:8], h.Usec)
	if counters64 {
		binary.BigEndian.PutUint64(b[8:16], h.Count)
	} else {
		binary.BigEndian.PutUint32(b[8:12], uint32(h.Count))
	}
}

func parseUDPHeader(b []byte, counters64 bool) (udpHeader, error) {
	if len(b) < udpHeaderLen(counters64) {
		return udpHeader{}, fmt.Errorf("%w: udp datagram of %d bytes", ErrProtocol, len(b))
	}
	h := udpHeader{Sec: binary.BigEndian.Uint32(b[0:4]), Usec: binary.BigEndian.Uint32(b[4:8])}
	if counters64 {
		h.Count = binary.BigEndian.Uint64(b[8:16])
	} else {
		h.Count = uint64(binary.BigEndian.Uint32(b[8:12]))
	}
	return h, nil
}

// udpRecvStats is iperf3's receive-side accounting for one UDP stream
// (iperf_udp_recv in iperf_udp.c), kept separate so tests can feed crafted
// sequences. It is not safe for concurrent use.
type udpRecvStats struct {
	Highest     uint64  // highest packet count seen (iperf3's packet_count)
	Errors      int64   // lost packets (iperf3's cnt_error)
	OutOfOrder  int64   // packets whose count was at or below the highest seen
	Jitter      float64 // seconds, RFC 1889 smoothing
	prevTransit float64
	Datagrams   int64 // datagrams received
	Bytes       int64
}

// add accounts one datagram with counter count, the sender's timestamp and
// the local arrival time (both in seconds since any epoch).
func (s *udpRecvStats) add(count uint64, sent, arrival float64, n int) {
	s.Datagrams++
	s.Bytes += int64(n)
	if count >= s.Highest+1 {
		if count > s.Highest+1 {
			s.Errors += int64(count-1) - int64(s.Highest)
		}
		s.Highest = count
	} else {
		s.OutOfOrder++
		if s.Errors > 0 {
			s.Errors--
		}
	}
	// iperf_time_diff returns the absolute difference.
	transit := arrival - sent
	if transit < 0 {
		transit = -transit
	}
	if s.Highest == 1 {
		s.prevTransit = transit
	}
	d := transit - s.prevTransit
	if d < 0 {
		d = -d
	}
	s.prevTransit = transit
	s.Jitter += (d - s.Jitter) / 16.0
}
