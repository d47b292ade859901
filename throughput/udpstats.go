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
	seeded      bool  // prevTransit holds a datagram's transit time
	Datagrams   int64 // datagrams received, duplicates included
	Bytes       int64
	// Duplicated counts datagrams whose count was seen before, within the
	// last seenWindow counts (an older one is taken as reordered): iperf3
	// counts them in OutOfOrder, the loss ledger apart.
	Duplicated int64
	seen       *[seenWindow / 64]uint64 // bit c%seenWindow: count c arrived; nil until the first
}

// seenWindow is how many counts below the highest the duplicate check
// remembers: 8 KiB a receiving stream.
const seenWindow = 1 << 16

// maxCount is the largest packet count taken into the sequence accounting:
// a real flow never gets near it, and above it a forged count would wrap
// Highest+1 and int64 conversions.
const maxCount = 1 << 62

// add accounts one datagram with counter count, the sender's timestamp and
// the local arrival time (both in seconds since any epoch).
func (s *udpRecvStats) add(count uint64, sent, arrival float64, n int) {
	s.Datagrams++
	s.Bytes += int64(n)
	switch {
	case count > maxCount:
		// Forged: counted as received bytes only.
	case count > s.Highest:
		s.Errors += int64(count - 1 - s.Highest)
		s.markNew(count)
		s.Highest = count
	default:
		if s.markOld(count) {
			s.Duplicated++
		}
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
	if !s.seeded {
		// As iperf3, the first datagram received (whatever its count)
		// starts the transit series: a lost first datagram must not turn
		// the whole one-way delay into jitter.
		s.prevTransit, s.seeded = transit, true
	}
	d := transit - s.prevTransit
	if d < 0 {
		d = -d
	}
	s.prevTransit = transit
	s.Jitter += (d - s.Jitter) / 16.0
}

// restartJitter starts the jitter estimate afresh from the next datagram,
// as iperf3 does when its omit period ends (iperf_reset_stats).
func (s *udpRecvStats) restartJitter() {
	s.Jitter, s.seeded = 0, false
}

// markNew records count, above Highest, clearing the counts the window
// slides past.
func (s *udpRecvStats) markNew(count uint64) {
	if s.seen == nil {
		s.seen = new([seenWindow / 64]uint64)
	}
	if count-s.Highest >= seenWindow {
		*s.seen = [seenWindow / 64]uint64{}
	} else {
		for c := s.Highest + 1; c < count; c++ {
			s.seen[c%seenWindow/64] &^= 1 << (c % 64)
		}
	}
	s.seen[count%seenWindow/64] |= 1 << (count % 64)
}

// markOld records count, at or below Highest, and reports whether it
// arrived before.
func (s *udpRecvStats) markOld(count uint64) (dup bool) {
	if s.seen == nil || s.Highest-count >= seenWindow {
		return false
	}
	w, bit := &s.seen[count%seenWindow/64], uint64(1)<<(count%64)
	dup = *w&bit != 0
	*w |= bit
	return dup
}
