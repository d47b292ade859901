package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/netperfkit/netperfkit/internal/iperf3doc"
	"github.com/netperfkit/netperfkit/throughput"
)

// MatrixSection is E2: the TCP/UDP throughput matrix judged against a stated
// limit.
type MatrixSection struct {
	Target             string  `json:"target"`
	LimitBitsPerSecond float64 `json:"limit_bits_per_second"`
	DurationSeconds    float64 `json:"duration_seconds"`
	// IntervalSeconds is the interval of each row's series (-i).
	IntervalSeconds float64 `json:"interval_seconds"`
	// InProcessServer is set when the target was the report's own
	// iperf3-compatible server: client and server then share one process,
	// whose CPU use (getrusage) counts both and the GC, so no row has a
	// sender CPU figure and none is judged generator-CPU-limited.
	InProcessServer bool        `json:"in_process_server,omitempty"`
	Rows            []MatrixRow `json:"rows"`
}

// IntervalPoint is one interval of a row's throughput series.
type IntervalPoint struct {
	StartSeconds  float64 `json:"start_seconds"`
	EndSeconds    float64 `json:"end_seconds"`
	BitsPerSecond float64 `json:"bits_per_second"`
	// Retransmits (TCP sender) or LostPercent (UDP receiver) in the
	// interval, where the measuring side knows them.
	Retransmits int64   `json:"retransmits"`
	LostPercent float64 `json:"lost_percent"`
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
	// SenderCPUPercent is the sending side's CPU use (percent of one CPU),
	// -1 when unknown (the target is the in-process server).
	SenderCPUPercent float64 `json:"sender_cpu_percent"`
	// ProcessCPUPercent is, with the in-process server, the whole report
	// process's CPU use: client, server and GC together.
	ProcessCPUPercent float64 `json:"process_cpu_percent,omitempty"`
	// DeliveredPercent is, for UDP, the received rate as a percentage of
	// the target: what reached the receiver, not what was sent.
	DeliveredPercent float64 `json:"delivered_percent_of_target,omitempty"`
	// LimitedBy names what limited the row: "limit" (within 90-110% of
	// it); for TCP "receiver window (server|client)", "sender buffer
	// (client|server)", "sender application (client|server)", "network" or
	// "generator CPU" (tcpLimitedBy); for UDP "sender's queue" (the sending
	// host refused datagrams), "generator", or for a lossy row the loss
	// ledger's largest line ("path", "receiver socket buffer (server)",
	// "sender NIC allowance"; lossBy), "loss" without a ledger; "above the stated
	// limit" when the row went past it (the limit was not in effect) and
	// nothing else limited it; or "" when nothing did. LimitedByDetail says
	// by how much, for TCP with the sender's fractions.
	LimitedBy       string `json:"limited_by"`
	LimitedByDetail string `json:"limited_by_detail,omitempty"`
	// Intervals is the throughput series (-i), for burst-credit depletion.
	Intervals []IntervalPoint `json:"intervals,omitempty"`
	Error     string          `json:"error,omitempty"`
	// TCPLimits is what held the TCP senders back (their kernel's
	// accounting, summed over the streams); nil when unknown.
	TCPLimits *throughput.TCPLimits `json:"tcp_limits,omitempty"`
	// LocalDrops and LocalRetries are, for UDP, the datagrams the sending
	// host's own queue refused: dropped, or sent once it had room
	// (throughput.Counts). Either makes the row "sender's queue"-limited.
	LocalDrops   int64 `json:"local_drops,omitempty"`
	LocalRetries int64 `json:"local_retries,omitempty"`
	// Ledger says, for UDP, where the datagrams went (throughput.Ledger);
	// the loss column breaks the loss down by it, and a lossy row's
	// "limited by" names its largest line.
	Ledger *throughput.Ledger `json:"loss_ledger,omitempty"`
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
// inProcess says addr is the report's own server.
func runMatrix(ctx context.Context, addr string, inProcess bool, limit float64, d, interval time.Duration, scs []matrixScenario, prog *progress) (*MatrixSection, error) {
	sec := &MatrixSection{Target: addr, LimitBitsPerSecond: limit, DurationSeconds: d.Seconds(), IntervalSeconds: interval.Seconds(), InProcessServer: inProcess}
	for _, s := range scs {
		row := MatrixRow{Scenario: s.name, Direction: "upload", Protocol: "tcp", Streams: s.streams, Retransmits: -1}
		if s.reverse {
			row.Direction = "download"
		}
		cfg := &throughput.Config{Streams: s.streams, Duration: d, Reverse: s.reverse, Interval: interval}
		if s.udp {
			row.Protocol = "udp"
			row.TargetBitsPerSecond = s.rate
			cfg.UDP = true
			cfg.BlockLen = 1400
			cfg.Bitrate = s.rate / float64(s.streams)
		}
		prog.Start(fmt.Sprintf("E2 matrix: %s %s", s.name, row.Direction), d)
		res, err := throughput.Run(ctx, addr, cfg)
		if err != nil && (res.RemoteAddr == "" || ctx.Err() == nil) { // never connected, or failed
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
		fillRow(&row, res, s.reverse, inProcess, limit)
		sec.Rows = append(sec.Rows, row)
		if err := ctx.Err(); err != nil {
			return sec, err
		}
	}
	return sec, nil
}

// fillRow copies a run's summary, series and verdict into row. With the
// in-process server (inProcess), either side's CPU figure is the whole
// process's, so it goes to ProcessCPUPercent and the sender's is unknown.
func fillRow(row *MatrixRow, res *throughput.Result, reverse, inProcess bool, limit float64) {
	sum, cpu := res.Upload, res.CPU.HostTotal
	if reverse {
		sum, cpu = res.Download, res.CPU.RemoteTotal
	}
	if sum != nil {
		row.SentBitsPerSecond = sum.Sent.BitsPerSecond
		row.ReceivedBitsPerSecond = sum.Received.BitsPerSecond
		row.Retransmits = sum.Sent.Retransmits
		row.LostPercent = sum.Received.LostPercent
		row.JitterMs = float64(sum.Received.Jitter) / float64(time.Millisecond)
		row.GeneratorLimited = sum.SenderLimited
		row.TCPLimits = sum.Limits
		row.LocalDrops, row.LocalRetries = sum.Sent.LocalDrops, sum.Sent.LocalRetries
		row.Ledger = sum.Ledger
	}
	row.SenderCPUPercent = cpu
	if inProcess {
		row.SenderCPUPercent, row.ProcessCPUPercent = -1, cpu
	}
	if limit > 0 {
		row.PercentOfLimit = 100 * row.ReceivedBitsPerSecond / limit
	}
	if row.TargetBitsPerSecond > 0 {
		row.DeliveredPercent = 100 * row.ReceivedBitsPerSecond / row.TargetBitsPerSecond
	}
	for _, iv := range res.Intervals {
		c := iv.Upload
		if reverse {
			c = iv.Download
		}
		// A sliver of an interval at the end (the run's last
		// microseconds) has a meaningless rate: leave it out.
		if c == nil || iv.Omitted || iv.End-iv.Start < res.Config.Interval/10 {
			continue
		}
		row.Intervals = append(row.Intervals, IntervalPoint{
			StartSeconds: iv.Start.Seconds(), EndSeconds: iv.End.Seconds(),
			BitsPerSecond: c.BitsPerSecond, Retransmits: c.Retransmits, LostPercent: c.LostPercent,
		})
	}
	row.LimitedBy, row.LimitedByDetail = limitedBy(row, limit, runtime.NumCPU())
}

// Thresholds of limitedBy.
const (
	nearLimit      = 0.9  // from 90% of the limit, the limit is what limits...
	overLimit      = 1.1  // ...up to 110%; beyond, the limit was not in effect
	cpuSaturated   = 90.0 // percent of each core the sender could use
	maxUDPLossPerc = 1.0  // more UDP loss than this is the path's or receiver's
)

// limitedBy judges a row: what delivered traffic shows, not only whether
// the sender reached its target; a TCP row by tcpLimitedBy. A sender's
// cores are min(streams, CPUs); a negative SenderCPUPercent (unknown) is
// never judged. A row within
// 90-110% of the limit is limited by it; a row above that band shows the
// stated limit was not in effect, and the other checks go on.
func limitedBy(r *MatrixRow, limit float64, cpus int) (string, string) {
	band := ""
	if limit > 0 {
		switch recv := r.ReceivedBitsPerSecond; {
		case recv > overLimit*limit:
			band = "above"
		case recv >= nearLimit*limit:
			band = "near"
		}
	}
	by, detail := "", ""
	if r.Protocol == "udp" {
		switch {
		case r.LocalDrops > 0:
			by, detail = "sender's queue", fmt.Sprintf("%d datagrams dropped by the sending host; sent %s, delivered %s of %s Gbit/s",
				r.LocalDrops, gbit(r.SentBitsPerSecond), gbit(r.ReceivedBitsPerSecond), gbit(r.TargetBitsPerSecond))
		case r.LocalRetries > 0 && r.GeneratorLimited:
			by, detail = "sender's queue", fmt.Sprintf("the sending host's queue held it to %s of %s Gbit/s; delivered %s",
				gbit(r.SentBitsPerSecond), gbit(r.TargetBitsPerSecond), gbit(r.ReceivedBitsPerSecond))
		case r.GeneratorLimited:
			by, detail = "generator", fmt.Sprintf("sent %s of %s Gbit/s", gbit(r.SentBitsPerSecond), gbit(r.TargetBitsPerSecond))
		case r.LostPercent > maxUDPLossPerc:
			by, detail = lossBy(r), fmt.Sprintf("%.1f%% lost: %s of %s Gbit/s delivered", r.LostPercent, gbit(r.ReceivedBitsPerSecond), gbit(r.TargetBitsPerSecond))
		case band == "near":
			return "limit", fmt.Sprintf("%.0f%% of it", r.PercentOfLimit)
		}
	} else {
		by, detail = tcpLimitedBy(r, band == "near", cpus)
	}
	if band != "above" {
		return by, detail
	}
	above := fmt.Sprintf("%.0f%% of the stated limit: it was not in effect", r.PercentOfLimit)
	if by == "" {
		return "above the stated limit", above
	}
	return by, detail + "; " + above
}

func writeMatrixText(w io.Writer, sec *MatrixSection) error {
	fmt.Fprintf(w, "E2 matrix: %s, %g s runs, judged against a limit of %s bits/s\n", sec.Target, sec.DurationSeconds, formatRate(sec.LimitBitsPerSecond))
	cpuHead := "sender CPU %"
	if sec.InProcessServer {
		cpuHead = "process CPU % (client+server)"
	}
	t := newTable(w, "scenario", "direction", "received Gbit/s", "% of limit", "% of target", cpuHead, "retransmits", "loss %", "jitter (ms)", "limited by")
	for _, r := range sec.Rows {
		if r.Error != "" {
			if r.ReceivedBitsPerSecond == 0 {
				t.row(r.Scenario, r.Direction, "error: "+r.Error, "", "", "", "", "", "", "")
				continue
			}
		}
		retr, loss, jit := "-", "-", "-"
		if r.Protocol == "tcp" && r.Retransmits >= 0 {
			retr = fmt.Sprint(r.Retransmits)
		}
		if r.Protocol == "udp" {
			loss, jit = pct(r.LostPercent), iperf3doc.FormatJitter(time.Duration(r.JitterMs*float64(time.Millisecond)))
			if where := lossWhere(r.Ledger); where != "" {
				loss += " (" + where + ")"
			}
		}
		by := "-"
		if r.LimitedBy != "" {
			by = r.LimitedBy
			if r.LimitedByDetail != "" {
				by += " (" + r.LimitedByDetail + ")"
			}
		}
		target := "-"
		if r.TargetBitsPerSecond > 0 {
			target = pct(r.DeliveredPercent)
		}
		cpu := "-"
		switch {
		case sec.InProcessServer:
			cpu = pct(r.ProcessCPUPercent)
		case r.SenderCPUPercent >= 0:
			cpu = pct(r.SenderCPUPercent)
		}
		t.row(r.Scenario, r.Direction, gbit(r.ReceivedBitsPerSecond), pct(r.PercentOfLimit), target, cpu, retr, loss, jit, by)
	}
	if err := t.flush(); err != nil {
		return err
	}
	if sec.InProcessServer {
		fmt.Fprintln(w, "CPU: the target is this process's own server, so the CPU column counts client, server and GC together; no row is judged by generator CPU (point -matrix at a remote server for the sender's)")
	}
	fmt.Fprintln(w)
	return nil
}
