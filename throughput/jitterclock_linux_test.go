package throughput

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/internal/iperfwire"
)

// TestJitterClock queues datagrams sent 20 ms apart, each stamped with its
// send time, before the receiver reads any, then reads them in one go. The
// kernel's clock sees each arrive as it was sent (transit constant, jitter
// near 0); iperf3's read clock sees them all arrive at once (transit
// falling 20 ms a datagram, jitter toward 20 ms).
func TestJitterClock(t *testing.T) {
	const n, gap = 10, 20 * time.Millisecond
	jitter := map[bool]time.Duration{}
	for _, read := range []bool{false, true} {
		cfg := withDefaults((&Config{UDP: true, BlockLen: 1400, SocketOptions: SocketOptions{JitterRead: read}}))
		e := newEngine(&cfg, false)
		rx, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		require.NoError(t, err)
		t.Cleanup(func() { rx.Close() })
		tx, err := net.DialUDP("udp", nil, rx.LocalAddr().(*net.UDPAddr))
		require.NoError(t, err)
		t.Cleanup(func() { tx.Close() })
		s := &flowStream{udp: true, conn: rx, fast: setupUDP(rx, &cfg, false)}
		require.NotNil(t, s.fast, "read clock %v: a paced receiver without GRO reads datagram by datagram", read)
		// The kernel turns receive timestamps on for the whole host a
		// moment after the first socket asks (a deferred static key):
		// datagrams queued before then carry none, and read as read.
		time.Sleep(100 * time.Millisecond)
		e.streams = []*flowStream{s}
		e.counting.Store(true)

		b := make([]byte, 1400)
		for i := 1; i <= n; i++ {
			sec, usec := e.stampAt(time.Now())
			iperfwire.PutUDPHeader(b, iperfwire.UDPHeader{Sec: sec, Usec: usec, Count: uint64(i)}, counters64(&cfg))
			_, err := tx.Write(b)
			require.NoError(t, err)
			time.Sleep(gap)
		}
		done := make(chan error, 1)
		go func() { done <- e.recvUDP(s) }()
		require.Eventually(t, func() bool { return s.bytes.Load() == n*1400 }, 10*time.Second, time.Millisecond)
		e.stop()
		require.NoError(t, <-done)
		s.mu.Lock()
		jitter[read] = time.Duration(s.rstats.Jitter * float64(time.Second))
		assert.Equal(t, int64(n), s.rstats.Datagrams)
		s.mu.Unlock()
	}
	t.Logf("jitter: kernel %v, read %v", jitter[false], jitter[true])
	// After 9 changes of 20 ms the running mean is 20 ms x (1-(15/16)^9),
	// about 8.8 ms; a datagram's transit through loopback varies by far
	// less than 2 ms, however loaded the machine.
	assert.Greater(t, jitter[true], 5*time.Millisecond, "the read clock takes the queue into the jitter")
	assert.Less(t, jitter[false], 2*time.Millisecond, "the kernel's clock takes each datagram as it arrived")
}
