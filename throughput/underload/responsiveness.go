package underload

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/netperfkit/netperfkit/internal/iperfwire"
	"github.com/netperfkit/netperfkit/internal/rpm"
	"github.com/netperfkit/netperfkit/latency"
	"github.com/netperfkit/netperfkit/latency/responsiveness"
	"github.com/netperfkit/netperfkit/throughput"
)

// ResponsivenessConfig sets up Responsiveness: the flows that load the
// path, and the probes that measure it while they run.
type ResponsivenessConfig struct {
	// Flows is the load, run as throughput.Run runs it. Its Duration (10 s when 0)
	// also bounds the probes. Its Interval, when 0, is 100 ms here: every
	// interval report samples the loaded connections' round trip. With
	// Reverse or Bidir it asks for the server's output (GetServerOutput).
	Flows throughput.Config
	// EchoAddr is a sockperf-compatible TCP echo server on the far host
	// (a latency.Server, or `sockperf server --tcp`): the new-connection
	// probes' target.
	EchoAddr string
	// Probes sets the probes' rate and timeout; its Duration is the flows'.
	Probes responsiveness.Config
}

// ResponsivenessResult is a path's responsiveness under load, in the terms
// of the IETF responsiveness draft (draft-ietf-ippm-responsiveness-03,
// section 4.3.1): "foreign" probes on new connections, and "self" probes
// on the load-generating connections themselves.
type ResponsivenessResult struct {
	// Flows is the load's own result.
	Flows *throughput.Result `json:"flows"`
	// Probes holds the new-connection probes (TCP connect + first echo,
	// the draft's foreign probes) and, for comparison, echoes on one
	// established idle connection beside the flows; nil when the
	// configuration was refused before they ran.
	Probes *responsiveness.Result `json:"probes"`
	// LoadedFlows are the loaded connections' own round trips: the kernel's
	// smoothed RTT (TCP_INFO) of every sending stream at every interval
	// report, the server's merged in for the streams it sends (-R,
	// --bidir). A bulk TCP stream cannot carry a request between its
	// bytes; its RTT is what a request on it would wait. Empty where
	// TCP_INFO is not available (UDP, or a platform without it).
	LoadedFlows responsiveness.ProbeStats `json:"loaded_flows"`
	// RPM is 60 s divided by 1/4 x (connect + request) + 1/2 x self, each
	// a 95% trimmed mean: the draft's weights without TLS (its foreign
	// half split over two phases instead of three). 0 when a part is
	// missing.
	RPM float64 `json:"rpm"`
	// SelfProbes names what RPM took as the self probes: "loaded_flows",
	// or "established_connection" when the flows' RTTs are unknown (a
	// stock server sending with -R reports them only when started with
	// -J; UDP flows have none).
	SelfProbes string `json:"self_probes,omitempty"`
}

// Responsiveness runs cfg.Flows against the iperf3-compatible server at addr and,
// while they run, probes the echo server at cfg.EchoAddr on new
// connections and samples the flows' own round trips. It returns the
// flows' error, or the probes' when the flows succeeded; when ctx ends,
// within about 100 ms, the result so far with ctx.Err(). The result and
// its Flows are never nil, whatever the error (docs/conventions.md,
// "Results after an error").
func Responsiveness(ctx context.Context, addr string, cfg *ResponsivenessConfig) (*ResponsivenessResult, error) {
	if cfg == nil || cfg.EchoAddr == "" {
		return &ResponsivenessResult{Flows: &throughput.Result{Role: "client"}},
			errors.New("underload: ResponsivenessConfig.EchoAddr: an echo server address is required")
	}
	flows := cfg.Flows
	if flows.Duration == 0 && flows.Bytes == 0 && flows.Blocks == 0 {
		flows.Duration = defaultFlowsDuration
	}
	if flows.Interval == 0 {
		flows.Interval = 100 * time.Millisecond
	}
	if flows.Reverse || flows.Bidir {
		// The server's own report carries its senders' RTTs when its
		// intervals do not line up with ours (a stock server's do not).
		flows.GetServerOutput = true
	}
	probes := cfg.Probes
	probes.Duration = flows.Omit + flows.Duration
	var (
		wg       sync.WaitGroup
		pres     *responsiveness.Result
		probeErr error
	)
	pctx, stopProbes := context.WithCancel(ctx)
	defer stopProbes()
	wg.Go(func() { pres, probeErr = responsiveness.Run(pctx, cfg.EchoAddr, &probes) })
	res, err := throughput.Run(ctx, addr, &flows)
	stopProbes() // a test that ended early (an error, -n) ends its probes
	wg.Wait()
	out := &ResponsivenessResult{Flows: res, Probes: pres, LoadedFlows: loadedRTTs(res)}
	if pres != nil {
		out.SelfProbes = "loaded_flows"
		self := out.LoadedFlows.TrimmedMean
		if self == 0 {
			out.SelfProbes, self = "established_connection", pres.Established.TrimmedMean
		}
		out.RPM = responsiveness.Combine(pres.NewConnectionPhases["connect"], pres.NewConnectionPhases["request"], self)
	}
	if err == nil && probeErr != nil && !errors.Is(probeErr, context.Canceled) {
		err = probeErr
	}
	return out, err
}

// loadedRTTs collects the sending streams' TCP_INFO round trips from every
// counted interval of res.
func loadedRTTs(res *throughput.Result) responsiveness.ProbeStats {
	rec, _ := latency.NewRecorder(nil) // the default configuration is valid
	serverSent := false                // the server's TCP_INFO was merged into the streams it sent
	for _, iv := range res.Intervals {
		if iv.Omitted {
			continue
		}
		for _, s := range iv.Streams {
			if s.TCP != nil && s.TCP.RTT > 0 {
				rec.Record(s.TCP.RTT)
				serverSent = serverSent || s.Reverse
			}
		}
	}
	if !serverSent && (res.Config.Reverse || res.Config.Bidir) {
		// A stock server reports every second whatever the client's
		// interval, so its figures were not merged: take them from its
		// own intervals.
		for _, d := range serverSenderRTTs(res.ServerOutputJSON) {
			rec.Record(d)
		}
	}
	if rec.Count() == 0 {
		return responsiveness.ProbeStats{}
	}
	h := rec.Snapshot()
	tm := rpm.TrimmedMean(h, rpm.Trim)
	return responsiveness.ProbeStats{Probes: rec.Count(), Latency: rec.Summary(0), TrimmedMean: tm,
		RPM: rpm.RPM(tm), Histogram: h}
}

// defaultFlowsDuration is throughput.Config's default Duration, which
// also bounds the probes.
const defaultFlowsDuration = 10 * time.Second

// serverOutput is the part of a server's iperf3 -J document (a stock
// server's get_server_output) with its senders' round trips.
type serverOutput struct {
	Intervals []struct {
		Streams []struct {
			Sender  bool           `json:"sender"`
			Omitted bool           `json:"omitted"`
			RTT     *iperfwire.Int `json:"rtt"` // microseconds
		} `json:"streams"`
	} `json:"intervals"`
}

// serverSenderRTTs returns the TCP_INFO round trips of the streams a
// server sent, from each of its counted intervals in its -J output.
func serverSenderRTTs(raw json.RawMessage) []time.Duration {
	var so serverOutput
	if len(raw) == 0 || json.Unmarshal(raw, &so) != nil {
		return nil
	}
	var out []time.Duration
	for _, iv := range so.Intervals {
		for _, s := range iv.Streams {
			if s.Sender && !s.Omitted && s.RTT != nil && *s.RTT > 0 {
				out = append(out, time.Duration(*s.RTT)*time.Microsecond)
			}
		}
	}
	return out
}
