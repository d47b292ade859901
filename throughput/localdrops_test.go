package throughput

import (
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/internal/iperfwire"
)

// recordSleep is a sleeper that records its waits instead of sleeping.
type recordSleep struct{ waits []time.Duration }

func (r *recordSleep) sleep(d time.Duration) { r.waits = append(r.waits, d) }
func (r *recordSleep) close()                {}

// refusingHost is a UDP send function whose host refuses (ENOBUFS) the
// first `refuse` writes and takes the rest, recording the counters of
// every datagram it took.
type refusingHost struct {
	refuse, calls int
	l             int
	taken         []uint64
}

func (h *refusingHost) send(b []byte) (int, error) {
	h.calls++
	if h.calls <= h.refuse {
		return 0, syscall.ENOBUFS
	}
	for off := 0; off < len(b); off += h.l {
		hd, err := iperfwire.ParseUDPHeader(b[off:off+h.l], false)
		if err != nil {
			return 0, err
		}
		h.taken = append(h.taken, hd.Count)
	}
	return len(b), nil
}

func newRefusalWriter(keepRate bool, host *refusingHost) (*udpWriter, *recordSleep) {
	const l = 100
	cfg := withDefaults((&Config{UDP: true, BlockLen: l, UDPKeepRate: keepRate, UDP32BitCounters: true}))
	e := newEngine(&cfg, false)
	e.counting.Store(true)
	s := &flowStream{send: true, udp: true}
	e.streams = []*flowStream{s}
	sl := &recordSleep{}
	host.l = l
	buf := make([]byte, 2*l)
	return &udpWriter{e: e, s: s, send: host.send, buf: buf, l: l, k: 2, sl: sl}, sl
}

// TestUDPWriterWaitsForQueue: by default datagrams the host refuses are
// offered again after a wait that doubles, and count as sent once taken,
// with no gap in their counters.
func TestUDPWriterWaitsForQueue(t *testing.T) {
	host := &refusingHost{refuse: 3}
	w, sl := newRefusalWriter(false, host)
	w.stamp(2, time.Now())
	n, err := w.write(2)
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	assert.Equal(t, 4, host.calls, "three refusals, then taken")
	assert.Equal(t, []time.Duration{minQueueWait, 2 * minQueueWait, 4 * minQueueWait}, sl.waits)
	assert.Equal(t, int64(6), w.s.localRetries.Load(), "two datagrams refused three times")
	assert.Zero(t, w.s.localDrops.Load())
	assert.Equal(t, int64(2), w.s.packets.Load())
	assert.Equal(t, int64(200), w.s.bytes.Load())

	w.stamp(2, time.Now())
	_, err = w.write(2)
	require.NoError(t, err)
	assert.Equal(t, []uint64{1, 2, 3, 4}, host.taken)
	assert.Len(t, sl.waits, 3, "the wait starts afresh after a write is taken")
	assert.Zero(t, w.backoff)
}

// TestUDPWriterKeepRateDrops: with UDPKeepRate a refused write is dropped
// at once and counted apart; its counters go to the next datagrams, so the
// receiver sees no loss for what never left the host.
func TestUDPWriterKeepRateDrops(t *testing.T) {
	host := &refusingHost{refuse: 1}
	w, sl := newRefusalWriter(true, host)
	w.stamp(2, time.Now())
	n, err := w.write(2)
	require.NoError(t, err)
	assert.Equal(t, 2, n, "the slot is used: the sender keeps the rate")
	assert.Equal(t, int64(2), w.s.localDrops.Load())
	assert.Zero(t, w.s.packets.Load(), "a dropped datagram is not sent")
	assert.Zero(t, w.s.bytes.Load())
	assert.Empty(t, sl.waits)

	w.stamp(2, time.Now())
	_, err = w.write(2)
	require.NoError(t, err)
	assert.Equal(t, []uint64{1, 2}, host.taken)
	assert.Equal(t, int64(2), w.s.packets.Load())
	assert.Zero(t, w.s.localRetries.Load())
}

// TestUDPWriterQueueWaitBounded: a host that keeps refusing is asked
// again at least every maxQueueWait, and a stop ends the wait.
func TestUDPWriterQueueWaitBounded(t *testing.T) {
	host := &refusingHost{refuse: 20}
	w, sl := newRefusalWriter(false, host)
	w.stamp(2, time.Now())
	_, err := w.write(2)
	require.NoError(t, err)
	for _, d := range sl.waits {
		assert.LessOrEqual(t, d, maxQueueWait)
	}
	assert.Equal(t, maxQueueWait, sl.waits[len(sl.waits)-1])

	host = &refusingHost{refuse: 1 << 30}
	w, _ = newRefusalWriter(false, host)
	w.sl = stopAfter{w.e, 3}.sleeper()
	n, err := w.write(2)
	assert.NoError(t, err, "a stop is not an error")
	assert.Zero(t, n)
	assert.Zero(t, w.s.packets.Load())
}

// stopAfter is a sleeper that tells the senders to stop on its n-th wait.
type stopAfter struct {
	e *engine
	n int
}

type stopSleep struct {
	stopAfter
	waits *int
}

func (s stopAfter) sleeper() sleeper { return stopSleep{s, new(int)} }

func (s stopSleep) sleep(time.Duration) {
	if *s.waits++; *s.waits >= s.n {
		s.e.sendStop.Store(true)
	}
}
func (stopSleep) close() {}

// TestLocalDropsReported: the refusals reach the intervals, the totals,
// the summary, the -J document (beside lost_packets) and one text line,
// and only when there were any.
func TestLocalDropsReported(t *testing.T) {
	cfg := withDefaults((&Config{UDP: true, Bitrate: 1.2e9, UDPKeepRate: true}))
	sent := Counts{Bytes: 1e8, BitsPerSecond: 8e8, Packets: 71000, LocalDrops: 35000}
	res := &Result{Role: "client", Config: cfg,
		Streams: []StreamResult{{ID: 1, Totals: Totals{Duration: time.Second, Sent: sent,
			Received: Counts{Bytes: 1e8, BitsPerSecond: 8e8, Packets: 71000}}}},
	}
	ss := res.Streams
	tr := &testRun{cfg: &cfg}
	res.Upload = tr.summary(ss, false, time.Second)
	require.NotNil(t, res.Upload)
	assert.Equal(t, int64(35000), res.Upload.Sent.LocalDrops)
	assert.True(t, res.Upload.QueueLimited)
	assert.True(t, res.Upload.SenderLimited)
	assert.Zero(t, res.Upload.Received.LostPackets, "the host's drops are not path loss")

	doc, err := iperfJSON(res)
	require.NoError(t, err)
	var j struct {
		End struct {
			Sum     map[string]any   `json:"sum"`
			SumSent map[string]any   `json:"sum_sent"`
			Streams []map[string]any `json:"streams"`
		} `json:"end"`
	}
	require.NoError(t, json.Unmarshal(doc, &j))
	assert.EqualValues(t, 35000, j.End.Sum["local_drops"])
	assert.EqualValues(t, 0, j.End.Sum["lost_packets"])
	assert.EqualValues(t, 35000, j.End.SumSent["local_drops"])
	assert.EqualValues(t, 35000, j.End.Streams[0]["udp"].(map[string]any)["local_drops"])

	var b strings.Builder
	b.WriteString(extrasText(t, res))
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	require.Len(t, lines, 2)
	assert.Contains(t, lines[0], "this host's own queue, not the path, limited this test")
	assert.Equal(t, "note: dropped by this host: 35000 datagrams (33% of those offered) refused by its own queue; not sent, not counted as lost", lines[1])

	// A clean run: no extra key, no extra line.
	res.Streams[0].Sent.LocalDrops = 0
	res.Upload = tr.summary(res.Streams, false, time.Second)
	assert.False(t, res.Upload.QueueLimited)
	doc, err = iperfJSON(res)
	require.NoError(t, err)
	assert.NotContains(t, string(doc), "local_drops")
	assert.NotContains(t, string(doc), "local_retries")
	b.Reset()
	b.WriteString(extrasText(t, res))
	assert.NotContains(t, b.String(), "this host")
}

// TestLocalRefusalsInIntervals: an interval carries each sending stream's
// refusals since the last one, and the direction's sum adds them up.
func TestLocalRefusalsInIntervals(t *testing.T) {
	cfg := withDefaults((&Config{UDP: true}))
	e := newEngine(&cfg, false)
	a, b := &flowStream{id: 1, send: true, udp: true}, &flowStream{id: 3, send: true, udp: true}
	e.streams = []*flowStream{a, b}
	tr := &testRun{cfg: &cfg, eng: e}
	a.localRetries.Store(5)
	b.localRetries.Store(7)
	b.localDrops.Store(2)
	iv := tr.cut(0, time.Second, false)
	require.NotNil(t, iv.Upload)
	assert.Equal(t, int64(12), iv.Upload.LocalRetries)
	assert.Equal(t, int64(2), iv.Upload.LocalDrops)
	a.localRetries.Store(6)
	iv = tr.cut(time.Second, 2*time.Second, false)
	assert.Equal(t, int64(1), iv.Upload.LocalRetries)
	assert.Zero(t, iv.Upload.LocalDrops)
}

func TestLocalRefusal(t *testing.T) {
	assert.True(t, localRefusal(syscall.ENOBUFS))
	assert.False(t, localRefusal(syscall.EAGAIN), "a full send buffer is waited for in poll(2)")
	assert.False(t, localRefusal(syscall.ECONNREFUSED))
}
