package throughput

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/netperfkit/netperfkit/internal/pathlab"
)

// TestLimitsOfKernelVersions: a kernel that fills TCP_INFO only up to
// before tcpi_bytes_retrans (before 4.19) gives unknown limits, not zeros;
// a full one gives the counters in their units (microseconds to
// durations, bytes/s to bits/s).
func TestLimitsOfKernelVersions(t *testing.T) {
	ti := &unix.TCPInfo{Busy_time: 1500, Rwnd_limited: 700, Sndbuf_limited: 300, Bytes_sent: 9000, Bytes_retrans: 90, Delivery_rate: 125e6}
	at := time.Unix(7, 0)
	assert.False(t, limitsOf(ti, limitsEnd-1, at).ok, "a struct that ends before tcpi_bytes_retrans")
	assert.False(t, limitsOf(ti, 104, at).ok, "a 4.9 kernel's 104-byte tcp_info")
	got := limitsOf(ti, limitsEnd, at)
	assert.Equal(t, limitSample{ok: true, at: at, busy: 1500 * time.Microsecond, rwnd: 700 * time.Microsecond,
		sndbuf: 300 * time.Microsecond, sent: 9000, retrans: 90, delivery: 1e9}, got)
}

// checkLimits asserts l is known and consistent: fractions within 0..1,
// and the stalls parts of the busy time (jiffy rounding aside). The
// kernel's delivery rate is a sample any legal value may take: positive
// once data was delivered (delivered), otherwise not negative. A loaded
// machine can hold a short test's loopback data back until its end
// (docs/testing.md), so whether data moved is the caller's to say.
func checkLimits(t *testing.T, l *TCPLimits, what string, delivered bool) {
	t.Helper()
	require.NotNil(t, l, what)
	for _, f := range []float64{l.Busy, l.RwndLimited, l.SndbufLimited, l.Retransmitted} {
		assert.GreaterOrEqual(t, f, 0.0, what)
		assert.LessOrEqual(t, f, 1.0, what)
	}
	assert.LessOrEqual(t, l.RwndLimited+l.SndbufLimited, l.Busy+1e-9, "%s: the stalls are part of the busy time: %+v", what, l)
	if delivered {
		assert.Positive(t, l.DeliveryRate, what)
	} else {
		assert.GreaterOrEqual(t, l.DeliveryRate, 0.0, what)
	}
}

// TestTCPLimitsReported: every TCP stream carries its sender's limits in
// its result and in each interval where the sender's TCP_INFO is known:
// this side's own where it sends, and for the streams the server sends
// (-R, --bidir) the server's, from its results, and in the intervals its -J
// output merged in after the test (where the two sides' intervals line up,
// as for TCPInfo).
func TestTCPLimitsReported(t *testing.T) {
	addr, results := startServer(t, nil)
	for _, c := range []struct {
		name string
		cfg  Config
	}{
		{"upload", Config{Streams: 2}},
		{"reverse", Config{Reverse: true}},
		{"bidir", Config{Bidir: true}},
	} {
		c.cfg.Duration, c.cfg.Interval = 600*time.Millisecond, 200*time.Millisecond
		res, err := Run(context.Background(), addr, &c.cfg)
		require.NoError(t, err, c.name)
		require.NotEmpty(t, res.Intervals, c.name)
		for _, iv := range res.Intervals {
			for _, si := range iv.Streams {
				if si.Sender || si.TCP != nil {
					checkLimits(t, si.Limits, c.name+": interval", false)
				} else {
					assert.Nil(t, si.Limits, c.name+": an interval the server's output did not line up with")
				}
			}
		}
		for _, sr := range res.Streams {
			checkLimits(t, sr.Limits, c.name+": stream result", sr.Received.Bytes > 0)
		}
		for _, sum := range []*Summary{res.Upload, res.Download} {
			if sum != nil {
				checkLimits(t, sum.Limits, c.name+": summary", sum.Received.Bytes > 0)
			}
		}
		total := res.Total().Limits
		checkLimits(t, total, c.name+": Total", res.Total().Received.Bytes > 0)
		switch {
		case c.cfg.Bidir:
			assert.Equal(t, res.Upload.Limits.DeliveryRate+res.Download.Limits.DeliveryRate, total.DeliveryRate, "bidir: delivery rates summed")
		case c.cfg.Reverse:
			assert.Equal(t, *res.Download.Limits, *total, "reverse: the server's, the sending direction")
		default:
			assert.Equal(t, *res.Upload.Limits, *total, "upload: the client's, the sending direction")
		}
		srv := <-results
		require.Len(t, srv.Streams, len(res.Streams), c.name)
		for _, sr := range srv.Streams {
			checkLimits(t, sr.Limits, c.name+": the server's stream result (the client's, for an upload)", sr.Received.Bytes > 0)
		}
	}
}

// TestTCPLimitsPacedSender: a sender paced far below what loopback carries
// has nothing queued most of the time: its busy fraction is low, which is
// how the limits tell a slow application from a slow path. A starved
// machine holds loopback data back (docs/testing.md), and the sender is
// then busy with data that waits: the fractions are judged only when the
// CPU pressure says the machine was not starved, and logged otherwise.
func TestTCPLimitsPacedSender(t *testing.T) {
	addr, _ := startServer(t, nil)
	pr := pathlab.StartCPUPressure()
	res, err := Run(context.Background(), addr, &Config{Duration: time.Second, Bitrate: 50e6})
	require.NoError(t, err)
	require.NotNil(t, res.Upload)
	l := res.Upload.Limits
	checkLimits(t, l, "paced upload", res.Upload.Received.Bytes > 0)
	if pr.MachineStarved(t) {
		t.Logf("starved machine: busy %.2f, rwnd-limited %.2f not judged", l.Busy, l.RwndLimited)
		return
	}
	assert.Less(t, l.Busy, 0.5, "%+v", l)
	assert.Less(t, l.RwndLimited, 0.25, "not a receiver's window stall (E2's threshold): %+v", l)
}
