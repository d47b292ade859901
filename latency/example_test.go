package latency_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/netip"
	"os"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/netperfkit/netperfkit/latency"
)

// A ping-pong against an in-process server: start a Server on a loopback
// port, measure 100 round trips, read the percentiles as time.Duration.
func Example() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := latency.NewServer(nil)
	if err != nil {
		log.Fatal(err)
	}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go func() { _ = srv.ServePacket(ctx, pc) }()

	// A generous ReadTimeout: only a reply later than 10 s counts as
	// dropped, even on a busy machine.
	res, err := latency.PingPong(ctx, pc.LocalAddr().String(), &latency.PingPongConfig{Count: 100, ReadTimeout: 10 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Sent, res.Observations+res.Dropped, res.P50 > 0, res.P99 >= res.P50)
	// Output: 100 100 true true
}

func ExampleNewRecorder() {
	rec, err := latency.NewRecorder(nil) // 1 ns .. 60 s, 3 significant figures
	if err != nil {
		log.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 4 { // Record is safe for concurrent use
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 250 {
				rec.Record(time.Duration(g*250+i+1) * time.Microsecond)
			}
		}()
	}
	wg.Wait()
	s := rec.Summary(0)
	// 3 significant figures: round for printing.
	fmt.Printf("n=%d p50=%v p99=%v max=%v\n", s.Observations, s.P50.Round(time.Microsecond), s.P99.Round(time.Microsecond), s.Max.Round(time.Microsecond))
	// Output: n=1000 p50=500µs p99=990µs max=1ms
}

func ExampleRecorder_Worker() {
	rec, err := latency.NewRecorder(&latency.RecorderConfig{Lowest: time.Microsecond, Highest: 10 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	w := rec.Worker() // one per recording goroutine: no sharing at all
	w.Record(3 * time.Millisecond)
	fmt.Println(rec.Count())
	// Output: 1
}

func ExampleRecorder_Summary() {
	var rec latency.Recorder
	for _, d := range []time.Duration{9 * time.Microsecond, 10 * time.Microsecond, 10 * time.Microsecond, 12 * time.Microsecond, 40 * time.Microsecond} {
		rec.Record(d)
	}
	s := rec.Summary(0)
	fmt.Printf("avg=%v std-dev=%v p50=%v p99=%v 99%% ci=[%v, %v]\n", s.Avg, s.StdDev, s.P50, s.P99, s.CILow, s.CIHigh)
	// Output: avg=16.206µs std-dev=13.355µs p50=10.007µs p99=40.031µs 99% ci=[823ns, 31.59µs]
}

func ExampleAggregateFunc() {
	// Three runs of the same experiment, reported as the median with the
	// min-max range.
	runs := []latency.Summary{{P50: 5200 * time.Nanosecond}, {P50: 4900 * time.Nanosecond}, {P50: 6100 * time.Nanosecond}}
	r := latency.AggregateFunc(runs, func(s latency.Summary) time.Duration { return s.P50 })
	fmt.Printf("p50 %v (%v-%v, n=%d)\n", r.Median, r.Min, r.Max, r.N)
	// Output: p50 5.2µs (4.9µs-6.1µs, n=3)
}

// A Recorder's Snapshot is an hdrhistogram-go Histogram: its own API
// gives quantiles, the compressed form HdrHistogram's tools read and the
// .hgrm percentile text.
func ExampleRecorder_Snapshot() {
	var rec latency.Recorder // the zero Recorder: 1 ns .. 60 s, 3 figures
	for i := 1; i <= 100; i++ {
		rec.Record(time.Duration(i) * time.Microsecond)
	}
	h := rec.Snapshot()
	fmt.Println(time.Duration(h.ValueAtQuantile(99)))
	b, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(b[:8]))
	_, _ = h.PercentilesPrint(io.Discard, 5, 1000) // .hgrm text in microseconds
	// Output:
	// 99.007µs
	// HISTFAAA
}

func ExamplePingPong() {
	// Measure a `sockperf server -i 10.0.0.2` (or a latency.Server) for five
	// seconds over UDP, in the low-latency spin mode.
	res, err := latency.PingPong(context.Background(), "10.0.0.2:11111", &latency.PingPongConfig{
		Duration:    5 * time.Second,
		MessageSize: 64,
		Spin:        time.Millisecond,
	})
	if err != nil {
		log.Fatal(err)
	}
	_ = res.WriteText(os.Stdout, "Round trip")
}

func ExamplePingPong_kernelStamps() {
	// The kernel-to-kernel round trip beside the application's: what the
	// path and the server did, without the client's own scheduling.
	res, err := latency.PingPong(context.Background(), "10.0.0.2:11111", &latency.PingPongConfig{
		Duration:     5 * time.Second,
		KernelStamps: true,
	})
	if err != nil {
		log.Fatal(err)
	}
	if res.KernelRTT == nil {
		fmt.Println("no kernel stamps:", res.NoKernelStamps)
	} else {
		fmt.Printf("kernel p50 %v p99 %v (%d stamps lost); application p50 %v p99 %v\n",
			res.KernelRTT.P50, res.KernelRTT.P99, res.KernelStampsLost, res.P50, res.P99)
	}
}

func ExamplePingPong_underLoad() {
	// 10000 messages per second over TCP, every 100th asks for a reply;
	// latency measured from each message's intended send time.
	res, err := latency.PingPong(context.Background(), "10.0.0.2:11111", &latency.PingPongConfig{
		Network: "tcp", Duration: 10 * time.Second, MPS: 10000, ReplyEvery: 100,
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("p99 %v (raw %v) at %.0f msg/s\n", res.P99, res.Raw.P99, res.AchievedMPS)
}

func ExampleServer() {
	// Serve sockperf clients of 10.0.0.0/8 over UDP and TCP on port 11111
	// until ctx ends.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := latency.NewServer(&latency.ServerConfig{
		MaxConns:       16,
		AllowedClients: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")},
		OnListen:       func(a net.Addr) { log.Printf("serving %s on %s", a.Network(), a) },
		OnFailure: func(remote net.Addr, err error) {
			if errors.Is(err, latency.ErrAccessDenied) { // not allowed, or MaxConns open
				log.Printf("refused %v: %v", remote, err)
			}
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, network := range []string{"udp", "tcp"} {
		wg.Go(func() {
			err := srv.ListenAndServe(ctx, network, ":11111")
			if err != nil && !errors.Is(err, context.DeadlineExceeded) {
				log.Print(err)
			}
		})
	}
	wg.Wait()
	log.Printf("%+v", srv.Stats())
}

func ExampleServer_Serve() {
	// Serve on a listener of the caller's: TCP here, but a unix socket or
	// any other stream listener works too.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	srv, err := latency.NewServer(nil)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("sockperf ping-pong --tcp -i 127.0.0.1 -p %d", ln.Addr().(*net.TCPAddr).Port)
	if err := srv.Serve(ctx, ln); !errors.Is(err, context.DeadlineExceeded) {
		log.Print(err)
	}
}

func ExampleSchedule() {
	// Five requests at 1,000 per second on two workers. The function would
	// send a request and wait for its reply; the result has both response
	// times (from the intended start) and service times (from the actual
	// one).
	res, err := latency.Schedule(context.Background(), &latency.ScheduleConfig{Rate: 1000, Workers: 2, Count: 5,
		Do: func(ctx context.Context, r latency.Request) error { return nil }})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Started, res.Response.Observations, res.Service.Observations)
	// Output: 5 5 5
}

// The README's latency snippet, run against an in-process server on a
// loopback port (TestReadmeExample runs it; internal/readme keeps the two
// texts the same).
func Example_readme() {
	ctx := context.Background()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	srv, err := latency.NewServer(nil)
	if err != nil {
		log.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() { _ = srv.ServePacket(sctx, pc) }()
	addr := pc.LocalAddr().String()

	// README begin
	res, err := latency.PingPong(ctx, addr, &latency.PingPongConfig{Duration: time.Second})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("p50 %v, p99 %v, p99.9 %v over %d round trips (%d dropped)\n",
		res.P50, res.P99, res.P999, res.Observations, res.Dropped)
	// README end
}
