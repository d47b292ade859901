package cache

import (
	"bufio"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/internal/resp"
)

// The sample stamps exactly one request of each block, at a place that
// moves from block to block, so that a run stamps at least
// kernelSampleMin requests (all of a run of fewer than twice that).
func TestKernelSampleOnePerBlock(t *testing.T) {
	for _, tc := range []struct {
		rate      float64
		d         time.Duration
		maxOps    int64
		wantEvery int64
	}{
		{1000, 3 * time.Second, 0, 3},
		{5000, 3 * time.Second, 0, 15},
		{1000, time.Second, 0, 1},
		{500, 400 * time.Millisecond, 0, 1},
		{5000, 20 * time.Second, 4500, 4},
		{1e7, 20 * time.Second, 0, 200000},
	} {
		every := sampleEvery(tc.rate, tc.d, tc.maxOps)
		assert.Equal(t, tc.wantEvery, every, "%v/s for %v, max %d", tc.rate, tc.d, tc.maxOps)
		if every > 1000 {
			continue
		}
		k := &kernelRecorder{every: every, seed: 7}
		n := int64(tc.rate * tc.d.Seconds())
		if tc.maxOps > 0 {
			n = min(n, tc.maxOps)
		}
		var stamped int64
		places := map[int64]bool{}
		for seq := range n {
			if k.sampled(seq) {
				stamped++
				places[seq%every] = true
				assert.True(t, k.sampled(seq), "the rule is a function of seq")
			}
			if seq%every == every-1 {
				assert.Equal(t, seq/every+1, stamped, "block %d", seq/every)
			}
		}
		assert.GreaterOrEqual(t, stamped, min(n, int64(kernelSampleMin)))
		if every >= 3 {
			assert.Greater(t, len(places), 1, "the place in the block moves")
		}
	}
	assert.False(t, (*kernelRecorder)(nil).sampled(0))
}

// respServer answers every command on a loopback port with $1 v.
func respServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := resp.NewReader(bufio.NewReader(c), resp.DefaultLimits)
				for {
					if _, err := r.Read(); err != nil {
						return
					}
					if _, err := c.Write([]byte("$1\r\nv\r\n")); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// On a connection of a run that takes the kernel view, only the sampled
// requests are stamped, each keyed by the offset of its own last byte
// (OPT_ID): a sampled request's view is found under its key and lies
// inside its round trip, and an unsampled one leaves no stamp under its
// key, nor anywhere (the stamper read none).
func TestKernelViewStampsOnlySampledRequests(t *testing.T) {
	addr := respServer(t)
	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	rec, err := newRecorder()
	require.NoError(t, err)
	k := &kernelRecorder{rec: rec, every: 3, seed: 1}
	c := newConn(nc, addr, time.Second, &readerPool{}, nil)
	defer c.release()
	args := []string{"GET", "k"}
	cmdLen := uint32(len(resp.AppendCommand(nil, args...)))
	var (
		offset     uint32
		sampled    int64
		longest    time.Duration
		sent, left time.Time
	)
	// The kernel turns receive stamps on for the whole host in deferred
	// work (net_enable_timestamp): until that has run, which on a loaded
	// machine may take a few requests, replies arrive unstamped. Requests
	// outside the sample take the connection to its stamped reads first.
	warm := time.Now().Add(10 * time.Second)
	for {
		_, err := c.roundTrip(time.Now().Add(10*time.Second), args, &stamps{kernel: k})
		require.NoError(t, err)
		offset += cmdLen
		if c.kr == nil {
			break // the test fails below, saying why
		}
		if _, stamped := c.kr.Stamped(); stamped || time.Now().After(warm) {
			break
		}
	}
	require.NotNil(t, c.kr, "the replies are not read in the kernel")
	_, stamped := c.kr.Stamped()
	require.True(t, stamped, "no reply stamped in 10 s")
	for seq := range int64(30) {
		st := &stamps{kernel: k, sample: k.sampled(seq), sent: &sent, left: &left}
		sent, left = time.Time{}, time.Time{}
		before := rec.Count()
		v, err := c.roundTrip(time.Now().Add(10*time.Second), args, st)
		require.NoError(t, err)
		require.Equal(t, "v", v.Text())
		took := time.Since(sent)
		offset += cmdLen
		require.NotNil(t, c.kv, "no stamper: %v", k.why.Load())
		require.NotNil(t, c.kv.tx, "no stamper: %v", k.why.Load())
		if st.sample {
			sampled++
			assert.Equal(t, offset-1, c.kv.id, "request %d's key", seq)
			assert.Equal(t, before+1, rec.Count(), "request %d has no view", seq)
			longest = max(longest, took)
			continue
		}
		assert.Equal(t, before, rec.Count(), "request %d was not sampled", seq)
		_, found := c.kv.tx.Take(offset - 1)
		assert.False(t, found, "unsampled request %d was stamped", seq)
	}
	assert.Equal(t, int64(10), sampled)
	assert.Equal(t, sampled, rec.Count(), "every sampled request has its view")
	assert.Zero(t, k.lost.Load())
	// Taken: the sampled requests' stamps, and the test's look for each
	// unsampled one's, which found none.
	assert.Equal(t, int64(30), c.kv.tx.Taken())
	assert.Equal(t, int64(20), c.kv.tx.Lost())
	assert.LessOrEqual(t, time.Duration(rec.Snapshot().Max()), longest, "a view longer than its round trip")
}

// A request of a run's only worker (stamps.block) reads its connection in
// a blocking receive (kstamp's EnableBlock), which keeps the request's
// deadline itself: replies are read, with and without the kernel view,
// and a server that never answers fails the request with a timeout once
// its deadline has passed.
func TestBlockingConnReadsAndKeepsTheDeadline(t *testing.T) {
	addr := respServer(t)
	for _, kv := range []bool{false, true} {
		nc, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		c := newConn(nc, addr, time.Second, &readerPool{}, nil)
		var k *kernelRecorder
		if kv {
			rec, err := newRecorder()
			require.NoError(t, err)
			k = &kernelRecorder{rec: rec, every: 1}
		}
		for range 5 {
			v, err := c.roundTrip(time.Now().Add(10*time.Second), []string{"GET", "k"}, &stamps{block: true, kernel: k, sample: kv})
			require.NoError(t, err, "kernel view %v", kv)
			assert.Equal(t, "v", v.Text())
		}
		assert.True(t, c.block, "kernel view %v: the reads do not block", kv)
		require.NoError(t, c.release())
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	held := make(chan net.Conn, 1)
	go func() {
		s, _ := ln.Accept()
		held <- s // reads nothing, answers nothing
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	c := newConn(nc, ln.Addr().String(), time.Second, &readerPool{}, nil)
	defer c.release()
	defer func() {
		if s := <-held; s != nil {
			s.Close()
		}
	}()
	deadline := time.Now().Add(100 * time.Millisecond)
	_, err = c.roundTrip(deadline, []string{"GET", "k"}, &stamps{block: true})
	require.Error(t, err)
	assert.True(t, isTimeout(err), "%v", err)
	assert.False(t, time.Now().Before(deadline), "failed before its deadline")
	assert.True(t, c.block)
	assert.True(t, c.broken)
}
