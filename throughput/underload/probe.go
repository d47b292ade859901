package underload

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/netperfkit/netperfkit/latency"
	"github.com/netperfkit/netperfkit/latency/responsiveness"
	"github.com/netperfkit/netperfkit/throughput"
)

// Config is a throughput test and the latency probe that runs beside it.
type Config struct {
	// Flows is the load, run as throughput.Run runs it. Its OnEvent, when
	// set, still receives every event.
	Flows throughput.Config
	// EchoAddr is a sockperf-compatible echo server ("host:port"): `sockperf
	// server`, or a latency.Server on the far host. Required.
	EchoAddr string
	// Probe tunes the probe (nil means UDP, 14-byte messages, 100 per
	// second, uniform arrivals). Its Duration is replaced by the test's:
	// the probe runs from the moment data flows until the test ends. A zero
	// MPS becomes 100 messages per second and a zero ReplyEvery 1 (every
	// message measured); a zero WarmUp becomes the test's omit period; a
	// zero CoolDown becomes none.
	Probe *latency.PingPongConfig
	// Responsiveness, when set, makes Run measure the path's
	// responsiveness under load instead of the open-loop probe (Probe is
	// then unused, and Result.Latency stays nil): the IETF
	// responsiveness draft's probes on new connections to EchoAddr (TCP:
	// a latency.Server, or `sockperf server --tcp`), at this rate and for
	// the flows' omit period and duration (its Duration is replaced), and
	// the loaded connections' own round trips. Flows' zero Duration (with
	// no Bytes or Blocks) then means 10 s, its zero Interval 100 ms (every
	// interval report samples the loaded connections' round trip), and
	// Reverse or Bidir ask for the server's output (GetServerOutput).
	Responsiveness *responsiveness.Config
}

// Result is a test's flows and the round trips measured beside them.
type Result struct {
	// Flows is the throughput test's result; a probe that failed adds a
	// "latency probe: ..." note to its Notes.
	Flows *throughput.Result `json:"flows"`
	// Latency is the RTT distribution under load; nil when the probe
	// failed or the flows never started.
	Latency *latency.PingPongResult `json:"latency,omitempty"`
	// Responsiveness, set when Config.Responsiveness asked for it, is the
	// path's responsiveness under load, in the terms of the IETF
	// responsiveness draft (draft-ietf-ippm-responsiveness-03, section
	// 4.3.1): the "foreign" probes on new connections and, for
	// comparison, echoes on one established idle connection beside the
	// flows. Its RPM is 60 s divided by 1/4 x (connect + request) + 1/2 x
	// self, each a 95% trimmed mean: the draft's weights without TLS, the
	// self probes being LoadedFlows when their trimmed mean is known, else
	// the established connection's echoes (a stock server sending with -R
	// reports its RTTs only when started with -J; UDP flows have none); 0
	// when a part is missing. Nil when the configuration was refused before
	// the probes ran.
	Responsiveness *responsiveness.Result `json:"responsiveness,omitempty"`
	// LoadedFlows are the loaded connections' own round trips (the
	// draft's self probes), measured with Config.Responsiveness: the
	// kernel's smoothed RTT (TCP_INFO) of every sending stream at every
	// interval report, the server's merged in for the streams it sends
	// (-R, --bidir). A bulk TCP stream cannot carry a request between its
	// bytes; its RTT is what a request on it would wait. Zero where
	// TCP_INFO is not available (UDP, or a platform without it).
	LoadedFlows *responsiveness.ProbeStats `json:"loaded_flows,omitempty"`
}

// defaultProbeRate is the probe's rate when Config.Probe.MPS is zero,
// messages per second.
const defaultProbeRate = 100

// Run runs cfg.Flows against the iperf3-compatible server at addr and,
// from the moment its data flows until it ends, an open-loop latency probe
// to cfg.EchoAddr (what iperf3 users ask for in its issue 635): messages go
// out at a fixed rate on latency's scheduler, each asking for a reply, and
// round trips are measured from their intended send times, so a path that
// stalls shows in the tail instead of slowing the probe down. A probe
// that fails never fails the test: the flows' notes say why. Run returns
// throughput.Run's error; when ctx ends, within about 100 ms, the result
// so far with ctx.Err(). The Result and its Flows are never nil, whatever
// the error (docs/conventions.md, "Results after an error").
func Run(ctx context.Context, addr string, cfg *Config) (*Result, error) {
	if cfg == nil || cfg.EchoAddr == "" {
		return &Result{Flows: &throughput.Result{Role: "client"}}, errors.New("underload: Config.EchoAddr: an echo server address is required")
	}
	if cfg.Responsiveness != nil {
		return runResponsiveness(ctx, addr, cfg)
	}
	flows := cfg.Flows
	var (
		mu    sync.Mutex
		probe *probeRun
	)
	user := flows.OnEvent
	flows.OnEvent = func(e throughput.Event) {
		if e.Kind == throughput.EventStart && e.Result != nil {
			c := e.Result.Config // with the defaults filled in
			mu.Lock()
			if probe == nil {
				probe = startProbe(ctx, cfg, c.Omit, c.Omit+c.Duration)
			}
			mu.Unlock()
		}
		if user != nil {
			user(e)
		}
	}
	res, err := throughput.Run(ctx, addr, &flows)
	out := &Result{Flows: res}
	mu.Lock()
	defer mu.Unlock()
	if probe != nil {
		lat, perr := probe.stop()
		out.Latency = lat
		if perr != nil {
			res.Notes = append(res.Notes, "latency probe: "+perr.Error())
		}
	}
	return out, err
}

// probeRun is a probe in flight.
type probeRun struct {
	cancel context.CancelFunc
	done   chan struct{}
	res    *latency.PingPongResult
	err    error
}

func startProbe(ctx context.Context, c *Config, omit, total time.Duration) *probeRun {
	var cfg latency.PingPongConfig
	if c.Probe != nil {
		cfg = *c.Probe
	}
	cfg.Count = 0
	if cfg.MPS == 0 {
		cfg.MPS = defaultProbeRate
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
		pr.res, pr.err = latency.PingPong(pctx, c.EchoAddr, &cfg)
	}()
	return pr
}

// stop ends the probe and returns what it measured; the cancellation that
// ends it is not an error. A probe that failed (latency.PingPong's result
// is never nil, even then) gives a nil result and its error.
func (pr *probeRun) stop() (*latency.PingPongResult, error) {
	pr.cancel()
	<-pr.done
	ended := errors.Is(pr.err, context.Canceled) || errors.Is(pr.err, context.DeadlineExceeded)
	if pr.err != nil && !ended {
		return nil, pr.err
	}
	return pr.res, nil
}
