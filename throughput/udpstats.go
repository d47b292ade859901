package throughput

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
