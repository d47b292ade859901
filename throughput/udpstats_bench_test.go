package throughput

import "testing"

// BenchmarkUDPRecvStatsAdd is the receiver's per-datagram accounting: in
// order, with one datagram in 64 arriving after the next (issue 32 added
// the duplicate window to it).
func BenchmarkUDPRecvStatsAdd(b *testing.B) {
	var s udpRecvStats
	c := uint64(0)
	for b.Loop() {
		c++
		n := c
		if c%64 == 0 {
			n = c + 1
		} else if c%64 == 1 && c > 1 {
			n = c - 1
		}
		s.add(n, float64(c)*1e-5, float64(c)*1e-5+1e-4, 1400)
	}
}
