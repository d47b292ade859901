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

// runResponsiveness is Run with cfg.Responsiveness set: it runs cfg.Flows
// against the iperf3-compatible server at addr and, while they run, probes
// the echo server at cfg.EchoAddr on new connections and samples the
// flows' own round trips. It returns the flows' error, or the probes' when
// the flows succeeded; when ctx ends, within about 100 ms, the result so
// far with ctx.Err().
func runResponsiveness(ctx context.Context, addr string, cfg *Config) (*Result, error) {
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
	probes := *cfg.Responsiveness
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
	loaded := loadedRTTs(res)
	out := &Result{Flows: res, Responsiveness: pres, LoadedFlows: &loaded}
	if pres != nil {
		self := loaded.TrimmedMean
		if self == 0 {
			self = pres.Established.TrimmedMean
		}
		pres.RPM = rpm.Combine(pres.NewConnectionPhases["connect"], pres.NewConnectionPhases["request"], self)
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
