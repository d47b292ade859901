package srdexperiment

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/netperfkit/netperfkit/ethtool"
	"github.com/netperfkit/netperfkit/latency"
	"github.com/netperfkit/netperfkit/srd"
	"github.com/netperfkit/netperfkit/throughput"
)

// Target is one server of the experiment: an iperf3-compatible throughput
// server and a sockperf-compatible ping-pong server, usually on one host.
type Target struct {
	// Name labels the row, for example "same AZ".
	Name string `json:"name"`
	// ThroughputAddr is the host:port of the throughput server (iperf3 -s,
	// or throughput.Server).
	ThroughputAddr string `json:"throughput_addr"`
	// PingPongAddr is the host:port of the UDP ping-pong server (sockperf
	// server, or latency.Server).
	PingPongAddr string `json:"pingpong_addr"`
}

// Defaults of Config: the field study's settings (E1).
const (
	defaultSingleFlowDuration  = 15 * time.Second
	defaultMultiStreamDuration = 20 * time.Second
	defaultStreams             = 8
	defaultRTTDuration         = 15 * time.Second
)

// Config tunes Run. A nil *Config means the
// field study's settings (E1): 15 s single flow, 20 s with 8 streams, 15 s of
// UDP ping-pong, and no interface snapshots. The callbacks are called from
// the goroutine that runs Run.
type Config struct {
	// Interface is the interface whose ENA counters are snapshotted before
	// each target's first run and after each of its runs. "" means no
	// snapshots; the SRD column then says no_srd_statistics.
	Interface string
	// SingleFlowDuration of the 1-stream TCP run; 0 means 15 s.
	SingleFlowDuration time.Duration
	// MultiStreamDuration of the N-stream TCP run; 0 means 20 s.
	MultiStreamDuration time.Duration
	// Streams of the N-stream run; 0 means 8.
	Streams int
	// RTTDuration of the UDP ping-pong run; 0 means 15 s.
	RTTDuration time.Duration
	// Throughput measures the throughput to addr with streams parallel TCP
	// flows for d and returns the received rate in bits per second; nil
	// means throughput.Run in the client sending direction, reporting what
	// the server received. When ctx ends it must return promptly, with the
	// rate measured so far (or 0) and ctx.Err().
	Throughput func(ctx context.Context, addr string, streams int, d time.Duration) (bitsPerSecond float64, err error)
	// RTT measures UDP ping-pong round trips to addr for d; nil means
	// latency.PingPong over UDP keeping every round trip (sockperf
	// --full-rtt). When ctx ends it must return promptly, with the
	// statistics so far and ctx.Err().
	RTT func(ctx context.Context, addr string, d time.Duration) (latency.Summary, error)
	// Snapshot is the snapshot source: it reads the statistics of iface,
	// once before a target's first phase and once after each phase; nil
	// means ethtool.ReadSnapshot (linux only). Saved snapshots can be fed
	// through it (see Replay).
	Snapshot func(iface string) (*ethtool.Snapshot, error)
	// OnPhase, when set, is called from the running goroutine as each
	// phase of each target starts ("1-flow", "n-stream", "rtt").
	OnPhase func(target, phase string)
}

// TargetResult is one row of the experiment's table.
type TargetResult struct {
	Target
	SingleFlowBitsPerSecond  float64 `json:"single_flow_bits_per_second"`
	Streams                  int     `json:"streams"`
	MultiStreamBitsPerSecond float64 `json:"multi_stream_bits_per_second"`
	// RTT holds the round-trip statistics (p50_us, p99_us, p999_us...).
	RTT latency.Summary `json:"rtt"`
	// SRD is the coverage of the target's whole window, from the snapshots
	// taken before the first run and after the last.
	SRD srd.CoverageReport `json:"srd"`
	// Windows holds one counter window per phase that ran, in order
	// ("1-flow", "n-stream", "rtt"): the snapshots are taken between the
	// phases, so each window counts its own phase's traffic.
	Windows []srd.Window `json:"windows"`
	// Error is set when a run failed; the other columns hold what was
	// measured before it.
	Error string `json:"error,omitempty"`
}

// Result is the field table of E1: one row per target.
type Result struct {
	Interface string         `json:"interface"`
	Started   time.Time      `json:"started"`
	Targets   []TargetResult `json:"targets"`
}

func (c *Config) withDefaults() Config {
	var out Config
	if c != nil {
		out = *c
	}
	if out.SingleFlowDuration == 0 {
		out.SingleFlowDuration = defaultSingleFlowDuration
	}
	if out.MultiStreamDuration == 0 {
		out.MultiStreamDuration = defaultMultiStreamDuration
	}
	if out.Streams == 0 {
		out.Streams = defaultStreams
	}
	if out.RTTDuration == 0 {
		out.RTTDuration = defaultRTTDuration
	}
	if out.Throughput == nil {
		out.Throughput = runThroughput
	}
	if out.RTT == nil {
		out.RTT = runRTT
	}
	if out.Snapshot == nil {
		out.Snapshot = ethtool.ReadSnapshot
	}
	return out
}

// validate names the first field out of range.
func (c *Config) validate() error {
	if c.Streams < 1 {
		return fmt.Errorf("srdexperiment: Config.Streams must be positive, got %d", c.Streams)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"SingleFlowDuration", c.SingleFlowDuration}, {"MultiStreamDuration", c.MultiStreamDuration}, {"RTTDuration", c.RTTDuration},
	} {
		if d.v < 0 {
			return fmt.Errorf("srdexperiment: Config.%s must not be negative, got %v", d.name, d.v)
		}
	}
	return nil
}

// Run runs, for each target in turn: single-flow TCP, N-stream TCP
// and UDP ping-pong, with a snapshot of cfg.Interface before and after, and
// returns the table. A failed run is recorded in its row and the experiment
// goes on with the next target; the error is non-nil only for invalid
// arguments, a snapshot failure other than an interface without statistics,
// ctx ending, or every run of every target failing (an empty table is not a
// success: the error then says so and quotes the first failure).
//
// The Result is never nil, whatever the error (docs/conventions.md): after
// invalid arguments it is empty, and otherwise it holds the rows so far.
//
// When ctx ends, in any phase, Run returns as soon as the running
// measurement does (within 100 ms with the default Throughput and RTT) the
// rows so far, the last one holding what its runs measured before the
// cancel and the SRD coverage of its shortened window, with an error
// matching ctx.Err().
func Run(ctx context.Context, targets []Target, cfg *Config) (*Result, error) {
	c := cfg.withDefaults()
	res := &Result{Interface: c.Interface}
	if ctx == nil {
		return res, errors.New("srdexperiment: nil context.Context ctx")
	}
	if len(targets) == 0 {
		return res, errors.New("srdexperiment: no targets")
	}
	if err := c.validate(); err != nil {
		return res, err
	}
	res.Started = time.Now()
	measured := false
	for _, t := range targets {
		if err := ctx.Err(); err != nil {
			return res, fmt.Errorf("srdexperiment: %w", err)
		}
		row, ok, err := runTarget(ctx, t, &c)
		res.Targets = append(res.Targets, row)
		measured = measured || ok
		if err != nil {
			return res, err
		}
	}
	if !measured {
		return res, fmt.Errorf("srdexperiment: every run of all %d targets failed; the first: %s: %s", len(targets), res.Targets[0].Name, res.Targets[0].Error)
	}
	return res, nil
}

// runTarget runs the phases of one target; ok reports whether one of them
// succeeded.
func runTarget(ctx context.Context, t Target, c *Config) (_ TargetResult, ok bool, _ error) {
	row := TargetResult{Target: t, Streams: c.Streams}
	before, err := snapshot(c)
	if err != nil {
		return row, false, err
	}
	phases := []struct {
		name, what string
		run        func() error
	}{
		{"1-flow", "1-flow TCP", func() (err error) {
			row.SingleFlowBitsPerSecond, err = c.Throughput(ctx, t.ThroughputAddr, 1, c.SingleFlowDuration)
			return err
		}},
		{"n-stream", fmt.Sprintf("%d-stream TCP", c.Streams), func() (err error) {
			row.MultiStreamBitsPerSecond, err = c.Throughput(ctx, t.ThroughputAddr, c.Streams, c.MultiStreamDuration)
			return err
		}},
		{"rtt", "UDP ping-pong", func() (err error) {
			row.RTT, err = c.RTT(ctx, t.PingPongAddr, c.RTTDuration)
			return err
		}},
	}
	var cancelled error
	prev := before
	for _, p := range phases {
		if c.OnPhase != nil {
			c.OnPhase(t.Name, p.name)
		}
		err := p.run()
		ok = ok || err == nil
		if err != nil && ctx.Err() == nil && row.Error == "" {
			row.Error = p.what + ": " + err.Error()
		}
		if err := ctx.Err(); err != nil {
			cancelled = fmt.Errorf("srdexperiment: %s: %w", p.name, err)
		}
		// The snapshot is an ioctl, not a network exchange: it is taken
		// after a cancel too, so the interrupted phase has its window.
		after, err := snapshot(c)
		if err != nil {
			return row, ok, errors.Join(cancelled, err)
		}
		w := srd.NewWindow(prev, after)
		w.Phase = p.name
		noInterface(c, &w.CoverageReport)
		row.Windows = append(row.Windows, w)
		prev = after
		if cancelled != nil {
			break
		}
	}
	row.SRD = srd.Coverage(before, prev)
	noInterface(c, &row.SRD)
	return row, ok, cancelled
}

// noInterface explains an empty window when no interface was given.
func noInterface(c *Config, r *srd.CoverageReport) {
	if c.Interface == "" {
		r.Reason = "no interface was given to snapshot"
	}
}

// snapshot reads cfg.Interface; an interface without statistics gives an
// empty snapshot, so Coverage says no_srd_statistics.
func snapshot(c *Config) (*ethtool.Snapshot, error) {
	if c.Interface == "" {
		return &ethtool.Snapshot{Time: time.Now()}, nil
	}
	s, err := c.Snapshot(c.Interface)
	if errors.Is(err, ethtool.ErrNoStats) {
		return &ethtool.Snapshot{Time: time.Now(), Interface: c.Interface}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("srdexperiment: snapshot: %w", err)
	}
	return s, nil
}

// runThroughput is the default Throughput: throughput.Run in the client
// sending direction, reporting what the server received (or, when the
// server's figure is missing, what was sent).
func runThroughput(ctx context.Context, addr string, streams int, d time.Duration) (float64, error) {
	r, err := throughput.Run(ctx, addr, &throughput.Config{Streams: streams, Duration: d, Interval: -1})
	var bps float64
	if r != nil && r.Upload != nil {
		bps = r.Upload.Received.BitsPerSecond
		if bps <= 0 {
			bps = r.Upload.Sent.BitsPerSecond
		}
	}
	if err != nil {
		return bps, err
	}
	if r == nil || r.Upload == nil {
		return 0, errors.New("srdexperiment: throughput result has no upload summary")
	}
	return bps, nil
}

// runRTT is the default RTT: latency.PingPong over UDP, keeping every round
// trip.
func runRTT(ctx context.Context, addr string, d time.Duration) (latency.Summary, error) {
	r, err := latency.PingPong(ctx, addr, &latency.PingPongConfig{Network: "udp", Duration: d})
	if r == nil {
		return latency.Summary{}, err
	}
	return r.Summary, err
}

// WriteTable prints the table as the field study did, with throughput in
// Gbit/s and RTT in microseconds, then the SRD evidence per target. A nil r
// or w is an error.
func (r *Result) WriteTable(w io.Writer) error {
	if r == nil || w == nil {
		return errors.New("srdexperiment: WriteTable: nil *Result or io.Writer w")
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	streams := 8
	if len(r.Targets) > 0 {
		streams = r.Targets[0].Streams
	}
	fmt.Fprintf(tw, "path\t1 flow\t%d streams\tRTT p50\tRTT p99\tRTT p99.9\tSRD tx\tSRD eligible\tcoverage\tmode\n", streams)
	for _, t := range r.Targets {
		cov, mode := "-", "-"
		tx, el := "-", "-"
		if t.SRD.HasSRD() {
			tx, el = fmt.Sprintf("+%d", t.SRD.TxPktsDelta), fmt.Sprintf("+%d", t.SRD.EligibleTxPktsDelta)
			cov = t.SRD.Percent()
			if cov != "-" {
				cov += "%"
			}
			mode = fmt.Sprintf("%d", uint64(t.SRD.Mode))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.1f us\t%.1f us\t%.1f us\t%s\t%s\t%s\t%s\n",
			t.Name, gbit(t.SingleFlowBitsPerSecond), gbit(t.MultiStreamBitsPerSecond),
			float64(t.RTT.P50)/1e3, float64(t.RTT.P99)/1e3, float64(t.RTT.P999)/1e3, tx, el, cov, mode)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var b strings.Builder
	for _, t := range r.Targets {
		fmt.Fprintf(&b, "%s: %s: %s\n", t.Name, t.SRD.Verdict, t.SRD.Reason)
		if t.Error != "" {
			fmt.Fprintf(&b, "%s: error: %s\n", t.Name, t.Error)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func gbit(bps float64) string { return fmt.Sprintf("%.1f Gbit/s", bps/1e9) }
