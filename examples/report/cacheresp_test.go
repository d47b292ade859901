package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/cache/cachetest"
	"github.com/netperfkit/netperfkit/latency/responsiveness"
)

func TestCacheResponsiveness(t *testing.T) {
	for name, cfg := range map[string]*cachetest.Config{"plain": nil, "tls": {TLS: true, User: "bench", Password: "pw"}} {
		t.Run(name, func(t *testing.T) {
			s := cachetest.NewServer(t, cfg)
			res, err := cacheResponsiveness(context.Background(), s.Endpoint(), &cacheRespConfig{
				Load: &cache.WorkloadConfig{Workers: 8, Duration: 1500 * time.Millisecond, KeySpace: 100}, ProbeRate: 20,
			})
			require.NoError(t, err)
			t.Logf("load %.0f ops/s; new connection: %d probes, trimmed mean %.0f us (phases %v); loaded: %d probes, trimmed mean %.0f us; RPM %.0f",
				res.Load.OpsPerSec, res.NewConnection.Probes, (float64(res.NewConnection.TrimmedMean) / 1e3), res.NewConnectionPhasesUs,
				res.Loaded.Probes, (float64(res.Loaded.TrimmedMean) / 1e3), res.RPM)
			require.NotNil(t, res.Load)
			assert.Equal(t, cache.Pooled, res.Load.Mode)
			assert.Positive(t, res.Load.Attempts)
			for _, ps := range []responsiveness.ProbeStats{res.NewConnection, res.Loaded} {
				assert.Positive(t, ps.Probes)
				assert.Zero(t, ps.Errors)
				assert.Equal(t, ps.Probes, ps.Latency.Observations)
				assert.Positive(t, (float64(ps.TrimmedMean) / 1e3))
				assert.LessOrEqual(t, (float64(ps.TrimmedMean) / 1e3), float64(ps.Latency.Max)/1e3)
				assert.InDelta(t, 60e6/(float64(ps.TrimmedMean)/1e3), ps.RPM, 1e-6*ps.RPM)
			}
			assert.Contains(t, res.NewConnectionPhasesUs, "connect")
			assert.Contains(t, res.NewConnectionPhasesUs, "request")
			if name == "tls" {
				assert.Contains(t, res.NewConnectionPhasesUs, "tls")
			} else {
				assert.NotContains(t, res.NewConnectionPhasesUs, "tls")
			}
			assert.Positive(t, res.RPM)
		})
	}
}

func TestCacheResponsivenessCancelAndErrors(t *testing.T) {
	s := cachetest.NewServer(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Cancel once the load has completed operations, not after a fixed time
	// in which a loaded machine may have sent nothing: the endpoint check's
	// probe looks one key up, and after 5 more lookups one of the load's
	// two closed-loop workers has sent 3 requests, so 2 were answered.
	go func() {
		waitForLookups(ctx, s.Addr, 6)
		cancel()
	}()
	res, err := cacheResponsiveness(ctx, s.Endpoint(), &cacheRespConfig{
		Load: &cache.WorkloadConfig{Workers: 2, Duration: time.Minute}, WarmUp: 200 * time.Millisecond,
	})
	require.ErrorIs(t, err, context.Canceled)
	require.NotNil(t, res)
	require.NotNil(t, res.Load)
	assert.Positive(t, res.Load.Attempts)

	_, err = cacheResponsiveness(context.Background(), s.Endpoint(), &cacheRespConfig{
		Load: &cache.WorkloadConfig{Duration: time.Second}, WarmUp: 2 * time.Second})
	require.Error(t, err)
	_, err = cacheResponsiveness(context.Background(), nil, nil)
	require.Error(t, err)
}

// waitForLookups returns once the server at addr has looked n keys up
// (INFO stats: keyspace_hits + keyspace_misses; INFO itself looks none up),
// or when ctx ends.
func waitForLookups(ctx context.Context, addr string, n int) {
	for ctx.Err() == nil {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			_ = c.SetDeadline(time.Now().Add(time.Second))
			_, _ = c.Write([]byte("INFO stats\r\n"))
			info := readBulk(bufio.NewReader(c))
			c.Close()
			if lookups(info) >= n {
				return
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// readBulk reads a RESP bulk string reply ("" on any error).
func readBulk(r *bufio.Reader) string {
	head, err := r.ReadString('\n')
	if err != nil || !strings.HasPrefix(head, "$") {
		return ""
	}
	n, err := strconv.Atoi(strings.TrimSpace(head[1:]))
	if err != nil || n < 0 || n > 1<<20 {
		return ""
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return ""
	}
	return string(b)
}

// lookups sums keyspace_hits and keyspace_misses of an INFO reply.
func lookups(info string) int {
	n := 0
	for _, line := range strings.Split(info, "\r\n") {
		k, v, _ := strings.Cut(line, ":")
		if k == "keyspace_hits" || k == "keyspace_misses" {
			x, _ := strconv.Atoi(v)
			n += x
		}
	}
	return n
}
