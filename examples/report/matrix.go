package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/netperfkit/netperfkit/throughput"
)

// MatrixSection is E2: the TCP/UDP throughput matrix judged against a stated
// limit.
type MatrixSection struct {
	Target             string      `json:"target"`
	LimitBitsPerSecond float64     `json:"limit_bits_per_second"`
	DurationSeconds    float64     `json:"duration_seconds"`
	Rows               []MatrixRow `json:"rows"`
}

// MatrixRow is one scenario of the matrix.
type MatrixRow struct {
	Scenario  string `json:"scenario"`
	Direction string `json:"direction"` // "upload" (client sends) or "download" (server sends)
	Protocol  string `json:"protocol"`
	Streams   int    `json:"streams"`
	// TargetBitsPerSecond is the UDP target rate (all streams), 0 for TCP.
	TargetBitsPerSecond   float64 `json:"target_bits_per_second,omitempty"`
	SentBitsPerSecond     float64 `json:"sent_bits_per_second"`
	ReceivedBitsPerSecond float64 `json:"received_bits_per_second"`
	// PercentOfLimit is the received rate as a percentage of the limit.
	PercentOfLimit float64 `json:"percent_of_limit"`
	// Retransmits by the sending side (TCP; -1 when unknown).
	Retransmits int64   `json:"retransmits"`
	LostPercent float64 `json:"lost_percent"`
	JitterMs    float64 `json:"jitter_ms"`
	// GeneratorLimited is true when the sender, not the path, limited the
	// result: it did not reach its target rate.
	GeneratorLimited bool `json:"generator_limited"`
	// SenderCPUPercent is the sending side's CPU use (percent of one CPU).
	SenderCPUPercent float64 `json:"sender_cpu_percent"`
	Error            string  `json:"error,omitempty"`
}

// matrixScenario is one planned run.
type matrixScenario struct {
	name    string
	reverse bool
	udp     bool
	streams int
	rate    float64 // total target bits/s for UDP
}

func matrixScenarios(streams int, rates []float64) []matrixScenario {
	sc := []matrixScenario{
		{name: "TCP 1 stream", streams: 1},
		{name: fmt.Sprintf("TCP %d streams", streams), streams: streams},
		{name: "TCP 1 stream", reverse: true, streams: 1},
		{name: fmt.Sprintf("TCP %d streams", streams), reverse: true, streams: streams},
	}
	for _, r := range rates {
		sc = append(sc, matrixScenario{name: "UDP target " + formatRate(r), udp: true, streams: 1, rate: r})
	}
	return sc
}

// runMatrix runs the scenarios in turn. When ctx ends it returns the rows
// so far, the interrupted one holding what it measured, with ctx.Err().
func runMatrix(ctx context.Context, addr string, limit float64, d time.Duration, scs []matrixScenario, prog *progress) (*MatrixSection, error) {
	sec := &MatrixSection{Target: addr, LimitBitsPerSecond: limit, DurationSeconds: d.Seconds()}
	for _, s := range scs {
		row := MatrixRow{Scenario: s.name, Direction: "upload", Protocol: "tcp", Streams: s.streams, Retransmits: -1}
		if s.reverse {
			row.Direction = "download"
		}
		cfg := &throughput.Config{Streams: s.streams, Duration: d, Reverse: s.reverse, Interval: -1}
		if s.udp {
			row.Protocol = "udp"
			row.TargetBitsPerSecond = s.rate
			cfg.UDP = true
			cfg.BlockLen = 1400
			cfg.Bitrate = s.rate / float64(s.streams)
		}
		prog.Start(fmt.Sprintf("E2 matrix: %s %s", s.name, row.Direction), d)
		res, err := throughput.Run(ctx, addr, cfg)
		if err != nil && (res == nil || ctx.Err() == nil) {
			row.Error = err.Error()
			sec.Rows = append(sec.Rows, row)
			if ctx.Err() != nil {
				return sec, ctx.Err()
			}
			continue
		}
		if err != nil {
			row.Error = "interrupted: " + err.Error()
		}
		sum, cpu := res.Upload, res.CPU.HostTotal
		if s.reverse {
			sum, cpu = res.Download, res.CPU.RemoteTotal
		}
		if sum != nil {
			row.SentBitsPerSecond = sum.Sent.BitsPerSecond
			row.ReceivedBitsPerSecond = sum.Received.BitsPerSecond
			row.Retransmits = sum.Sent.Retransmits
			row.LostPercent = sum.Received.LostPercent
			row.JitterMs = float64(sum.Received.Jitter) / float64(time.Millisecond)
			row.GeneratorLimited = sum.SenderLimited
		}
		row.SenderCPUPercent = cpu
		if limit > 0 {
			row.PercentOfLimit = 100 * row.ReceivedBitsPerSecond / limit
		}
		sec.Rows = append(sec.Rows, row)
		if err := ctx.Err(); err != nil {
			return sec, err
		}
	}
	return sec, nil
}

func writeMatrixText(w io.Writer, sec *MatrixSection) error {
	fmt.Fprintf(w, "E2 matrix: %s, %g s runs, judged against a limit of %s bits/s\n", sec.Target, sec.DurationSeconds, formatRate(sec.LimitBitsPerSecond))
	t := newTable(w, "scenario", "direction", "Gbit/s", "% of limit", "retransmits", "loss %", "jitter (ms)", "limited by")
	for _, r := range sec.Rows {
		if r.Error != "" {
			t.row(r.Scenario, r.Direction, "error: "+r.Error, "", "", "", "", "")
			continue
		}
		retr, loss, jit := "-", "-", "-"
		if r.Protocol == "tcp" && r.Retransmits >= 0 {
			retr = fmt.Sprint(r.Retransmits)
		}
		if r.Protocol == "udp" {
			loss, jit = pct(r.LostPercent), fmt.Sprintf("%.3f", r.JitterMs)
		}
		by := "-"
		if r.Protocol == "udp" {
			by = "target reached"
		}
		if r.GeneratorLimited {
			by = fmt.Sprintf("GENERATOR (sent %s of %s)", gbit(r.SentBitsPerSecond), gbit(r.TargetBitsPerSecond))
		}
		t.row(r.Scenario, r.Direction, gbit(r.ReceivedBitsPerSecond), pct(r.PercentOfLimit), retr, loss, jit, by)
	}
	if err := t.flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	return nil
}
