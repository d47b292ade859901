package cache_test

import (
	"bufio"
	"context"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/cache/cachetest"
)

// cpuTime is the process's user and system CPU time so far.
func cpuTime(b *testing.B) (user, sys time.Duration) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}

// reportCPU reports the CPU per operation since u0, s0 (user-ns/op,
// sys-ns/op).
func reportCPU(b *testing.B, u0, s0 time.Duration) {
	u1, s1 := cpuTime(b)
	n := float64(b.N)
	b.ReportMetric(float64(u1-u0)/n, "user-ns/op")
	b.ReportMetric(float64(s1-s0)/n, "sys-ns/op")
}

// benchSeconds is NETPERFKIT_BENCH_SECONDS, 2 s when unset.
func benchSeconds() time.Duration {
	secs := 2.0
	if v, err := strconv.ParseFloat(os.Getenv("NETPERFKIT_BENCH_SECONDS"), 64); err == nil && v > 0 {
		secs = v
	}
	return time.Duration(secs * float64(time.Second))
}

// bareGet is connect + GET + close as plainly as Go can: net.Dial's
// defaults (no deadline), one write, one read, Close.
func bareGet(addr string, buf []byte) error {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer nc.Close()
	if _, err := nc.Write(bareReq); err != nil {
		return err
	}
	_, err = nc.Read(buf)
	return err
}

var bareReq = []byte("*2\r\n$3\r\nGET\r\n$12\r\nnetperfkit:0\r\n")

// BenchmarkConnectGetClose is one connect + GET + close at a time (issue
// 31): through the resp engine's connect-per-op workload, and as a bare Go
// loop of net.Dial, a GET and Close, the floor a Go client can reach. Both
// report their process's CPU per operation: on a host whose other core
// serves the cache, the client's CPU is what its rate pays for. Run it with
// -cpuprofile and -memprofile to see where the resp engine's excess goes.
func BenchmarkConnectGetClose(b *testing.B) {
	s := cachetest.NewServer(b, nil)
	b.Run("resp", func(b *testing.B) {
		ep := endpointFor(s)
		w := &cache.WorkloadConfig{Mode: cache.ConnectPerOp, Workers: 1, GetWeight: 1, SetWeight: 0,
			KeySpace: 1, Duration: time.Hour, MaxOps: int64(b.N)}
		u0, s0 := cpuTime(b)
		b.ResetTimer()
		r, err := cache.Run(context.Background(), ep, w)
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		reportCPU(b, u0, s0)
		b.ReportMetric(r.OpsPerSec, "ops/s")
	})
	// Four workers for NETPERFKIT_BENCH_SECONDS (2 s), as
	// BenchmarkVsRedisBenchmark's connect-per-op rounds run: ops/s and
	// CPU per operation of the whole run (b.N is ignored).
	b.Run("resp-w4", func(b *testing.B) {
		d := benchSeconds()
		for b.Loop() {
			// The CPU is read at the first operation and at the first to
			// end a second before the run does: Run's own set-up (the
			// endpoint check, the TIME_WAIT count of /proc/net/tcp) is
			// not the operations' cost.
			var (
				first, last sync.Once
				u0, s0      time.Duration
				u1, s1      time.Duration
				t0          time.Time
				n0, n1, ops atomic.Int64
			)
			w := &cache.WorkloadConfig{Mode: cache.ConnectPerOp, Workers: 4, ValueSize: 100, KeySpace: 10000,
				Duration: d, OnOperation: func(_, end time.Time, _ error) {
					n := ops.Add(1)
					first.Do(func() { u0, s0 = cpuTime(b); t0 = time.Now(); n0.Store(n) })
					if end.Sub(t0) > d-time.Second {
						last.Do(func() { u1, s1 = cpuTime(b); n1.Store(n) })
					}
				}}
			r, err := cache.Run(context.Background(), endpointFor(s), w)
			if err != nil {
				b.Fatal(err)
			}
			n := float64(n1.Load() - n0.Load())
			b.ReportMetric(float64(u1-u0)/n, "user-ns/op")
			b.ReportMetric(float64(s1-s0)/n, "sys-ns/op")
			b.ReportMetric(r.OpsPerSec, "ops/s")
		}
		b.ReportMetric(0, "ns/op")
	})
	// The bare loop on four goroutines for the same time.
	b.Run("bare-w4", func(b *testing.B) {
		d := benchSeconds()
		for b.Loop() {
			var ops atomic.Int64
			var wg sync.WaitGroup
			u0, s0 := cpuTime(b)
			end := time.Now().Add(d)
			for range 4 {
				wg.Go(func() {
					buf := make([]byte, 512)
					for time.Now().Before(end) {
						if bareGet(s.Addr, buf) != nil {
							return
						}
						ops.Add(1)
					}
				})
			}
			wg.Wait()
			u1, s1 := cpuTime(b)
			n := float64(ops.Load())
			b.ReportMetric(float64(u1-u0)/n, "user-ns/op")
			b.ReportMetric(float64(s1-s0)/n, "sys-ns/op")
			b.ReportMetric(n/d.Seconds(), "ops/s")
		}
		b.ReportMetric(0, "ns/op")
	})
	b.Run("bare", func(b *testing.B) {
		req := []byte("*2\r\n$3\r\nGET\r\n$12\r\nnetperfkit:0\r\n")
		buf := make([]byte, 512)
		u0, s0 := cpuTime(b)
		start := time.Now()
		b.ResetTimer()
		for b.Loop() {
			nc, err := net.Dial("tcp", s.Addr)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := nc.Write(req); err != nil {
				b.Fatal(err)
			}
			if _, err := bufio.NewReader(nc).Read(buf); err != nil {
				b.Fatal(err)
			}
			nc.Close()
		}
		b.StopTimer()
		reportCPU(b, u0, s0)
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "ops/s")
	})
}
