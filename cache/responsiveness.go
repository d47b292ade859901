package cache

import (
	"context"
	"errors"
	"sync"
	"time"

	rpmdraft "github.com/netperfkit/netperfkit/internal/rpm"
	"github.com/netperfkit/netperfkit/latency"
	"github.com/netperfkit/netperfkit/latency/responsiveness"
)

// Defaults of ResponsivenessConfig.
const (
	defaultProbeRate    = 10
	defaultRespDuration = 10 * time.Second
	maxRespWarmUp       = time.Second
	foreignProbeWorkers = 8
	selfProbeWorkers    = 4
)

// ResponsivenessConfig configures Responsiveness. A nil config means the
// defaults.
type ResponsivenessConfig struct {
	// Load is the workload that loads the endpoint: it runs closed-loop in
	// pool mode (Mode and Rate are ignored), nil meaning the workload
	// defaults with a Duration of 10 s.
	Load *WorkloadConfig
	// ProbeRate is the number of probes of each kind per second. Zero
	// means 10.
	ProbeRate float64
	// WarmUp is how long the load runs before probing starts. Zero means
	// a fifth of the load's Duration, at most 1 s.
	WarmUp time.Duration
}

// ResponsivenessResult is the outcome of Responsiveness.
type ResponsivenessResult struct {
	// Load is the loading run.
	Load *RunResult `json:"load"`
	// NewConnection probes open a fresh connection each: TCP connect, TLS,
	// AUTH, the first command (GET) and close, as Prober.Probe does.
	NewConnection responsiveness.ProbeStats `json:"new_connection"`
	// NewConnectionPhasesUs holds the 95% trimmed means of the new
	// connections' phases that RPM weighs: "connect", "tls" (with TLS)
	// and "request" (AUTH, if any, and the first command).
	NewConnectionPhasesUs map[string]float64 `json:"new_connection_phases_trimmed_mean_us"`
	// Loaded probes send one GET on one of the load's own connections,
	// between its operations: the wait for the connection is part of the
	// round trip.
	Loaded responsiveness.ProbeStats `json:"loaded_connection"`
	// RPM is responsiveness as the IETF responsiveness draft combines it:
	// 60 s divided by 1/6 x (connect + TLS + request) + 1/2 x loaded, each
	// term a 95% trimmed mean; without TLS, 1/4 x (connect + request) +
	// 1/2 x loaded.
	RPM float64 `json:"rpm"`
}

// selfProbe is a probe handed to a load worker, which answers on done.
type selfProbe struct{ done chan error }

// probe runs a responsiveness probe on the worker's own client.
func (st *client) probe(ctx context.Context) error {
	if st.pooled == nil {
		var err error
		if st.pooled, err = st.wk.newClient(ctx); err != nil {
			return err
		}
	}
	return st.pooled.Get(ctx, defaultProbeKey)
}

// Responsiveness measures how responsive ep stays under load, in the manner
// of Apple's networkQuality and the IETF responsiveness draft: while a
// pooled closed-loop workload saturates it, probes run open-loop at
// ProbeRate per second on new connections and on the load's own
// connections. It returns both distributions and the RPM figure. Probe
// failures are counted, not fatal; it returns an error for an invalid
// configuration or an endpoint that cannot be reached, and when ctx ends
// (within about 100 ms on the resp engine) the result so far with ctx.Err().
func Responsiveness(ctx context.Context, ep *Endpoint, cfg *ResponsivenessConfig) (*ResponsivenessResult, error) {
	if ep == nil {
		return nil, errors.New("cache: nil endpoint")
	}
	var c ResponsivenessConfig
	if cfg != nil {
		c = *cfg
	}
	var load WorkloadConfig
	if c.Load != nil {
		load = *c.Load
	}
	load.Mode, load.Rate, load.Duration = ModePool, 0, orDefault(load.Duration, defaultRespDuration)
	w := load.withDefaults()
	c.ProbeRate = max(c.ProbeRate, 0)
	if c.ProbeRate == 0 {
		c.ProbeRate = defaultProbeRate
	}
	if c.WarmUp <= 0 {
		c.WarmUp = min(w.Duration/5, maxRespWarmUp)
	}
	if c.WarmUp >= w.Duration {
		return nil, errors.New("cache: responsiveness WarmUp must be shorter than the load's Duration")
	}
	newClient, err := openEngine(ctx, ep, &w)
	if err != nil {
		return nil, err
	}
	prober, err := NewProber(ctx, ep)
	if err != nil {
		return nil, err
	}
	return respRun(ctx, &c, &w, newClient, prober)
}

// respRun runs the load and both probe schedules.
func respRun(ctx context.Context, c *ResponsivenessConfig, w *WorkloadConfig, newClient newClientFunc, prober *Prober) (*ResponsivenessResult, error) {
	res := &ResponsivenessResult{}
	probes := make(chan *selfProbe)
	pctx, stopProbes := context.WithCancel(ctx)
	defer stopProbes()
	var wg sync.WaitGroup
	var loadErr error
	wg.Go(func() {
		defer stopProbes() // the loaded connections are gone
		res.Load, loadErr = runEngineProbed(ctx, newClient, w, probes)
	})
	if !sleepUntil(pctx, time.Now().Add(c.WarmUp)) {
		wg.Wait()
		return res, cmpErr(ctx.Err(), loadErr)
	}
	sc := func(workers int, do func(context.Context, latency.Request) error) *latency.ScheduleConfig {
		return &latency.ScheduleConfig{Rate: c.ProbeRate, Workers: workers, Duration: w.Duration - c.WarmUp,
			Recorder: &latency.RecorderConfig{Lowest: recordLowest}, Spin: -1, Do: do}
	}
	phases := newPhaseRecorders()
	var foreign, self *latency.ScheduleResult
	wg.Go(func() {
		foreign, _ = latency.Schedule(pctx, sc(foreignProbeWorkers, func(ctx context.Context, _ latency.Request) error {
			r, err := prober.Probe(ctx)
			if err == nil {
				phases.add(r)
			}
			return err
		}))
	})
	self, _ = latency.Schedule(pctx, sc(selfProbeWorkers, func(ctx context.Context, _ latency.Request) error {
		p := &selfProbe{done: make(chan error, 1)}
		select {
		case probes <- p:
		case <-ctx.Done():
			return ctx.Err()
		}
		return <-p.done
	}))
	wg.Wait()
	res.NewConnection, res.Loaded = responsiveness.ProbeStatsOf(foreign), responsiveness.ProbeStatsOf(self)
	res.NewConnectionPhasesUs = phases.trimmedMeans()
	res.RPM = rpm(res.NewConnectionPhasesUs, float64(res.Loaded.TrimmedMean)/1e3)
	return res, cmpErr(ctx.Err(), loadErr)
}

// cmpErr returns the first non-nil error.
func cmpErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// rpm combines the trimmed means (µs) as the draft does.
func rpm(foreign map[string]float64, selfUs float64) float64 {
	conn, req := foreign["connect"], foreign["request"]
	if conn == 0 || req == 0 || selfUs == 0 {
		return 0
	}
	var us float64
	if t, ok := foreign["tls"]; ok {
		us = (conn+t+req)/6 + selfUs/2
	} else {
		us = (conn+req)/4 + selfUs/2
	}
	return rpmdraft.RPM(time.Duration(us * 1e3))
}

// phaseRecorders collects the phases of new-connection probes.
type phaseRecorders struct {
	mu   sync.Mutex
	recs map[string]*latency.Recorder
}

func newPhaseRecorders() *phaseRecorders {
	return &phaseRecorders{recs: map[string]*latency.Recorder{}}
}

func (p *phaseRecorders) add(r *ProbeResult) {
	p.mu.Lock()
	defer p.mu.Unlock()
	rec := func(name string, d time.Duration) {
		if p.recs[name] == nil {
			p.recs[name], _ = newRecorder() // a valid fixed configuration
		}
		p.recs[name].Record(d)
	}
	rec("connect", r.Phases[PhaseConnect])
	if d, ok := r.Phases[PhaseTLS]; ok {
		rec("tls", d)
	}
	rec("request", r.Phases[PhaseAuth]+r.Phases[PhaseCommand])
}

func (p *phaseRecorders) trimmedMeans() map[string]float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]float64, len(p.recs))
	for name, rec := range p.recs {
		out[name] = float64(rpmdraft.TrimmedMean(rec.Snapshot(), rpmdraft.Trim)) / 1e3
	}
	return out
}
