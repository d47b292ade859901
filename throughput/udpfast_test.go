package throughput

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestUDPFastPathAccounting runs the same paced UDP test with and without
// GSO/GRO: at a rate loopback carries without loss, both must count every
// datagram exactly once and in order.
func TestUDPFastPathAccounting(t *testing.T) {
	addr, results := startServer(t, nil)
	for _, disable := range []bool{false, true} {
		// GSO needs >= 2 datagrams per 50 us: 1 Gbit/s gives 4. One datagram
		// per syscall under -race on a loaded machine manages ~100 Mbit/s.
		rate := 1e9
		if disable {
			rate = 80e6
		}
		// A paced test reads without GRO unless asked: ask, to cover it.
		res, err := Run(ctxT(t, 30*time.Second), addr, &Config{
			UDP:           true,
			Bitrate:       rate,
			BlockLen:      1400,
			Duration:      time.Second,
			Interval:      -1,
			SocketOptions: SocketOptions{DisableFastPath: disable, GRO: offloadOn},
		})
		require.NoError(t, err)
		srv := <-results
		if udpFastAvailable && !disable {
			assert.Equal(t, "gso", res.UDPOffload)
			assert.Equal(t, "gro", srv.UDPOffload)
		} else {
			assert.Equal(t, "none", res.UDPOffload)
		}
		u := res.Upload
		t.Logf("fast=%v sent %d packets, received %d, lost %d, ooo %d, %.0f bit/s", !disable, u.Sent.Packets, u.Received.Packets, u.Received.LostPackets, u.Received.OutOfOrder, u.Received.BitsPerSecond)
		assert.Equal(t, u.Sent.Bytes, u.Sent.Packets*1400)
		assert.InDelta(t, u.Sent.Packets, u.Received.Packets, float64(u.Sent.Packets)/100+64)
		assert.Equal(t, int64(0), u.Received.OutOfOrder)
		// Either the sender kept the pace or the result says it could not.
		if !u.SenderLimited {
			assert.InDelta(t, rate, u.Sent.BitsPerSecond, 0.2*rate)
		} else {
			assert.Less(t, u.Sent.BitsPerSecond, 0.95*rate)
		}
		// Sent minus received is the loss the receiver counted, up to the
		// datagrams in flight when the test ended.
		assert.InDelta(t, u.Sent.Packets-u.Received.Packets, 0, float64(u.Sent.Packets)/100+64)
	}
}

func TestGSOBatch(t *testing.T) {
	c := &Config{BlockLen: 1400, Bitrate: Unlimited}
	e := &engine{cfg: c}
	assert.Equal(t, 46, e.gsoBatch(), "64 KiB of 1400-byte datagrams")
	c.BlockLen = 100
	assert.Equal(t, 64, e.gsoBatch(), "the kernel's segment limit")
	c.BlockLen, c.Bitrate = 1400, 1e6
	assert.Equal(t, 1, e.gsoBatch(), "slow rates send datagram by datagram")
	c.Bitrate = 5e9
	assert.Equal(t, 22, e.gsoBatch(), "50 us at 5 Gbit/s: 31250 bytes, 22 datagrams")
	c.Bitrate = 1e9
	assert.Equal(t, 4, e.gsoBatch(), "50 us at 1 Gbit/s: 6250 bytes, 4 datagrams")
	c.BlockLen = 9000
	assert.Equal(t, 1, e.gsoBatch(), "a datagram longer than 50 us at the rate goes alone")
}

// TestSenderLimited asks for a rate one datagram per syscall cannot reach:
// the result must say that the generator, not the network, was the limit.
func TestSenderLimited(t *testing.T) {
	addr, _ := startServer(t, nil)
	res, err := Run(ctxT(t, 30*time.Second), addr, &Config{
		UDP:           true,
		Bitrate:       200e9,
		BlockLen:      1400,
		Duration:      500 * time.Millisecond,
		Interval:      -1,
		SocketOptions: SocketOptions{DisableFastPath: true},
	})
	require.NoError(t, err)
	assert.True(t, res.Upload.SenderLimited, "sent %.0f of 200e9 bit/s", res.Upload.Sent.BitsPerSecond)
	assert.Equal(t, 200e9, res.Config.Bitrate)
	assert.Contains(t, iperfText(res), "the generator, not the network, limited this test")
}

// TestIntervalsAddUp checks that per-stream interval bytes add up to the
// final per-stream figures, and that sums add up the streams.
func TestIntervalsAddUp(t *testing.T) {
	addr, _ := startServer(t, nil)
	var live []Interval
	res, err := Run(ctxT(t, 30*time.Second), addr, &Config{Duration: 700 * time.Millisecond, Streams: 3, Bidir: true,
		Interval: 200 * time.Millisecond, OnInterval: func(iv Interval) { live = append(live, iv) }})
	require.NoError(t, err)
	require.Equal(t, len(live), len(res.Intervals))
	require.NotEmpty(t, live)
	// The intervals tile the test: each starts where the last ended, those
	// that end before the test's planned end are one Interval long, and the
	// last ends with the test. How many there are depends on how late a
	// loaded machine runs the reporter and ends the test: a 700 ms test can
	// end before the 200 ms report is cut, and one that runs on past its
	// end by a tenth of an interval has the reporter cut the interval that
	// reaches it where it is, longer than one Interval (468 ms once).
	const planned, every = 700 * time.Millisecond, 200 * time.Millisecond
	prev := time.Duration(0)
	for i, iv := range res.Intervals {
		assert.Equal(t, prev, iv.Start, "interval %d", i)
		if i < len(res.Intervals)-1 {
			if iv.Start+every < planned {
				assert.Equal(t, every, iv.End-iv.Start, "interval %d", i)
			} else {
				assert.GreaterOrEqual(t, iv.End-iv.Start, every+every/10, "interval %d: cut past the planned end", i)
			}
		}
		prev = iv.End
	}
	assert.Equal(t, res.Upload.Duration, prev, "the last interval ends with the test")
	per := map[int]int64{}
	for _, iv := range res.Intervals {
		var up, down int64
		for _, s := range iv.Streams {
			per[s.ID] += s.Bytes
			if s.Reverse {
				down += s.Bytes
			} else {
				up += s.Bytes
			}
		}
		assert.Equal(t, up, iv.Upload.Bytes)
		assert.Equal(t, down, iv.Download.Bytes)
	}
	for _, s := range res.Streams {
		if s.Reverse {
			assert.Equal(t, s.Received.Bytes, per[s.ID], "stream %d", s.ID)
		} else {
			assert.Equal(t, s.Sent.Bytes, per[s.ID], "stream %d", s.ID)
		}
	}
	assert.Len(t, res.Streams, 6)
}
