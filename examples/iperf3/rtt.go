package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/netperfkit/netperfkit/latency"
	"github.com/netperfkit/netperfkit/throughput"
	"github.com/netperfkit/netperfkit/throughput/iperf3fmt"
	"github.com/netperfkit/netperfkit/throughput/underload"
)

// runTest runs the client's test: with --rtt, beside a latency probe to the
// echo server (underload.Run), whose result o.rttResult then holds.
func runTest(ctx context.Context, o *options, addr string, cfg *throughput.Config) (*throughput.Result, error) {
	if o.rtt == "" {
		return throughput.Run(ctx, addr, cfg)
	}
	ur, err := underload.Run(ctx, addr, &underload.Config{Flows: *cfg, EchoAddr: o.rtt})
	o.rttResult = ur.Latency // never nil, as its Flows
	return ur.Flows, err
}

// extras writes what netperfkit adds after iperf3's summary: the
// generator's notes, the RTT under load (--rtt) and the result's notes.
func extras(out io.Writer, txt *iperf3fmt.TextReport, res *throughput.Result, lat *latency.PingPongResult) {
	if lat == nil {
		txt.Extras(res)
		return
	}
	r := *res
	r.Notes = nil
	txt.Extras(&r)
	fmt.Fprintf(out, "RTT under load (%s, %d samples): p50 %.1f us  p99 %.1f us  p99.9 %.1f us  max %.1f us\n",
		lat.Network, lat.Observations, us(lat.P50), us(lat.P99), us(lat.P999), us(lat.Max))
	for _, n := range res.Notes {
		fmt.Fprintf(out, "note: %s\n", n)
	}
}

// withLatency adds the "latency" member last to an indented -J document,
// keeping the order of the others.
func withLatency(doc []byte, lat *latency.PingPongResult) ([]byte, error) {
	body := bytes.TrimRight(doc, "\n")
	if !bytes.HasSuffix(body, []byte("}")) {
		return nil, errors.New("iperf3: -J document does not end its object")
	}
	l, err := json.MarshalIndent(lat, "\t", "\t")
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.Write(bytes.TrimRight(body[:len(body)-1], "\n"))
	b.WriteString(",\n\t\"latency\": ")
	b.Write(l)
	b.WriteString("\n}")
	return b.Bytes(), nil
}

// us is d in microseconds, as the text report prints latencies.
func us(d time.Duration) float64 { return float64(d) / 1e3 }
