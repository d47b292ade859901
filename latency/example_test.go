package latency_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/netperfkit/netperfkit/latency"
)

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
	s := rec.Summary(nil)
	fmt.Printf("n=%d p50=%.0fus p99=%.0fus max=%.0fus\n", s.Observations, s.P50Us, s.P99Us, s.MaxUs)
	// Output: n=1000 p50=500us p99=990us max=1000us
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

func ExampleSummarizeSamples() {
	rtts := []time.Duration{9 * time.Microsecond, 10 * time.Microsecond, 10 * time.Microsecond, 12 * time.Microsecond, 40 * time.Microsecond}
	s := latency.SummarizeSamples(rtts, nil)
	fmt.Printf("avg=%.3f std-dev=%.3f p50=%.3f p99=%.3f 99%% ci=[%.3f, %.3f]\n", s.AvgUs, s.StdDevUs, s.P50Us, s.P99Us, s.CILowUs, s.CIHighUs)
	// Output: avg=16.200 std-dev=13.349 p50=10.000 p99=40.000 99% ci=[0.822, 31.578]
}

func ExampleAggregateFunc() {
	// Three runs of the same experiment, reported as the median with the
	// min-max range.
	runs := []latency.Summary{{P50Us: 5.2}, {P50Us: 4.9}, {P50Us: 6.1}}
	r := latency.AggregateFunc(runs, func(s latency.Summary) float64 { return s.P50Us })
	fmt.Printf("p50 %.1f us (%.1f-%.1f, n=%d)\n", r.Median, r.Min, r.Max, r.N)
	// Output: p50 5.2 us (4.9-6.1, n=3)
}

func ExampleEncodeHistogram() {
	rec, _ := latency.NewRecorder(nil)
	rec.Record(42 * time.Microsecond)
	s, err := latency.EncodeHistogram(rec.Snapshot())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(s[:8])
	// Output: HISTFAAA
}

func ExampleNewHistogramLog() {
	rec, _ := latency.NewRecorder(nil)
	rec.Record(42 * time.Microsecond)
	start := time.Now()
	l, err := latency.NewHistogramLog(os.Stdout, start)
	if err != nil {
		log.Fatal(err)
	}
	_ = l.WriteInterval(rec.Snapshot(), start, start.Add(time.Second), "")
}

func ExampleWritePercentiles() {
	rec, _ := latency.NewRecorder(nil)
	for i := 1; i <= 100; i++ {
		rec.Record(time.Duration(i) * time.Microsecond)
	}
	_ = latency.WritePercentiles(os.Stdout, rec.Snapshot()) // .hgrm text, microseconds
}

func ExamplePingPong() {
	// Measure a `sockperf server -i 10.0.0.2` (or a latency.Server) for five
	// seconds over UDP, in the low-latency spin mode.
	res, err := latency.PingPong(context.Background(), "10.0.0.2:11111", &latency.PingPongConfig{
		Duration:    5 * time.Second,
		MessageSize: 64,
		Mode:        latency.ModeSpin,
	})
	if err != nil {
		log.Fatal(err)
	}
	_ = res.WriteText(os.Stdout, "Round trip")
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
	fmt.Printf("p99 %.1f us (raw %.1f us) at %.0f msg/s\n", res.P99Us, res.Raw.P99Us, res.AchievedMPS)
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
			if errors.Is(err, latency.ErrTooManyConns) || errors.Is(err, latency.ErrAccessDenied) {
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
	res, err := latency.Schedule(context.Background(), &latency.ScheduleConfig{Rate: 1000, Workers: 2, Count: 5},
		func(ctx context.Context, r *latency.Request) error { return nil })
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Started, res.Response.Observations, res.Service.Observations)
	// Output: 5 5 5
}

func ExampleSearchPingPong() {
	// The highest under-load rate at which a sockperf server's p99.9
	// round trip stays within 200 µs.
	slo, err := latency.ParseSLO("p99.9=200us")
	if err != nil {
		log.Fatal(err)
	}
	res, err := latency.SearchPingPong(context.Background(), "10.0.0.2:11111", nil,
		&latency.SearchConfig{SLO: slo, Start: 10_000, StepDuration: time.Second})
	if err != nil {
		log.Fatal(err)
	}
	for _, st := range res.Steps {
		log.Printf("%s %.0f msg/s: p99.9 %.1f us, met %v", st.Phase, st.Rate, st.PercentileUs, st.Met)
	}
	log.Printf("%.0f msg/s meets %s; broke at %.0f", res.Rate, res.SLO, res.BrokeAt)
}
