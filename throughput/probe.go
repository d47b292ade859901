package throughput

import (
	"context"
	"time"

	"github.com/netperfkit/netperfkit/latency"
)

// LatencyProbe runs a latency.PingPong next to the flows of a test, so the
// result shows the RTT distribution under load beside the throughput
// (what iperf3 users ask for in its issue 635). The probe is open-loop: its
// messages go out at a fixed rate on latency's scheduler, each asking for a
// reply, and round trips are measured from their intended send times, so a
// path that stalls shows in the tail instead of slowing the probe down.
type LatencyProbe struct {
	// Addr is a sockperf-compatible echo server ("host:port"): `sockperf
	// server`, or a latency.Server on the far host.
	Addr string
	// Rate is the number of probe messages per second. Zero means 100;
	// Config.MPS, when set, takes precedence.
	Rate int
	// Config tunes the probe (nil means UDP, 14-byte messages, Rate per
	// second, uniform arrivals). Its Duration is replaced by the test's:
	// the probe runs from the moment data flows until the test ends. A zero
	// MPS becomes Rate and a zero ReplyEvery 1 (every message measured); a
	// zero WarmUp becomes the test's omit period; a zero CoolDown becomes
	// none.
	Config *latency.PingPongConfig
}

// defaultProbeRate is LatencyProbe's default rate, messages per second.
const defaultProbeRate = 100

// probeRun is a probe in flight.
type probeRun struct {
	cancel context.CancelFunc
	done   chan struct{}
	res    *latency.PingPongResult
	err    error
}

func startProbe(ctx context.Context, p *LatencyProbe, omit, total time.Duration) *probeRun {
	var cfg latency.PingPongConfig
	if p.Config != nil {
		cfg = *p.Config
	}
	cfg.Count = 0
	if cfg.MPS == 0 {
		cfg.MPS = p.Rate
		if cfg.MPS <= 0 {
			cfg.MPS = defaultProbeRate
		}
	}
	if cfg.ReplyEvery == 0 {
		cfg.ReplyEvery = 1
	}
	// The run is ended by cancellation when the flows end; the duration is
	// only a bound.
	cfg.Duration = 24 * time.Hour
	if total > 0 {
		cfg.Duration = total + 5*time.Second
	}
	if cfg.WarmUp == 0 {
		cfg.WarmUp = omit
		if omit == 0 {
			cfg.WarmUp = -1
		}
	}
	if cfg.CoolDown == 0 {
		cfg.CoolDown = -1
	}
	pctx, cancel := context.WithCancel(ctx)
	pr := &probeRun{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(pr.done)
		pr.res, pr.err = latency.PingPong(pctx, p.Addr, &cfg)
	}()
	return pr
}

// stop ends the probe and returns what it measured; the cancellation that
// ends it is not an error.
func (pr *probeRun) stop() (*latency.PingPongResult, error) {
	pr.cancel()
	<-pr.done
	if pr.res != nil {
		return pr.res, nil
	}
	return nil, pr.err
}
