package main

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/internal/rpm"
	"github.com/netperfkit/netperfkit/latency"
	"github.com/netperfkit/netperfkit/latency/responsiveness"
)

// Defaults of cacheRespConfig.
const (
	cacheProbeRate      = 10
	cacheRespDuration   = 10 * time.Second
	cacheMaxWarmUp      = time.Second
	cacheForeignWorkers = 8
	cacheSelfWorkers    = 4
	// cacheProbeKey is the key the loaded-connection probes read, as
	// cache.Prober's default first command does.
	cacheProbeKey = "netperfkit:probe"
)

// cacheRespConfig configures cacheResponsiveness. A nil config means the
// defaults.
type cacheRespConfig struct {
	// Load is the workload that loads the endpoint: it runs closed-loop in
	// pool mode (Mode and Rate are ignored), nil meaning the workload
	// defaults with a Duration of 10 s.
	Load *cache.WorkloadConfig
	// ProbeRate is the number of probes of each kind per second. Zero
	// means 10.
	ProbeRate float64
	// WarmUp is how long the load runs before probing starts. Zero means
	// a fifth of the load's Duration, at most 1 s.
	WarmUp time.Duration
}

// CacheResponsiveness is the outcome of cacheResponsiveness.
type CacheResponsiveness struct {
	// Load is the loading run.
	Load *cache.RunResult `json:"load"`
	// NewConnection probes open a fresh connection each: TCP connect, TLS,
	// AUTH, the first command (GET) and close, as cache.Prober.Probe does.
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

// cacheResponsiveness measures how responsive ep stays under load, in the
// manner of Apple's networkQuality and the IETF responsiveness draft: while
// a pooled closed-loop cache.Run saturates it, probes run open-loop at
// ProbeRate per second on new connections (cache.Prober) and on the load's
// own connections (cache.WorkloadConfig.Interleave). It returns both
// distributions and the RPM figure. Probe failures are counted, not fatal;
// it returns an error for an invalid configuration or an endpoint that
// cannot be reached, and when ctx ends the result so far with ctx.Err().
func cacheResponsiveness(ctx context.Context, ep *cache.Endpoint, cfg *cacheRespConfig) (*CacheResponsiveness, error) {
	if ep == nil {
		return nil, errors.New("responsiveness: nil endpoint")
	}
	var c cacheRespConfig
	if cfg != nil {
		c = *cfg
	}
	var load cache.WorkloadConfig
	if c.Load != nil {
		load = *c.Load
	}
	load.Mode, load.Rate = cache.Pooled, 0
	if load.Duration <= 0 {
		load.Duration = cacheRespDuration
	}
	c.ProbeRate = max(c.ProbeRate, 0)
	if c.ProbeRate == 0 {
		c.ProbeRate = cacheProbeRate
	}
	if c.WarmUp <= 0 {
		c.WarmUp = min(load.Duration/5, cacheMaxWarmUp)
	}
	if c.WarmUp >= load.Duration {
		return nil, errors.New("responsiveness: WarmUp must be shorter than the load's Duration")
	}
	prober, err := cache.NewProber(ep)
	if err != nil {
		return nil, err
	}
	// Check the endpoint first, so that an unreachable one fails before
	// any load runs.
	if _, err := prober.Probe(ctx); err != nil {
		return nil, err
	}
	return cacheRespRun(ctx, &c, ep, &load, prober)
}

// cacheRespRun runs the load and both probe schedules.
func cacheRespRun(ctx context.Context, c *cacheRespConfig, ep *cache.Endpoint, load *cache.WorkloadConfig, prober *cache.Prober) (*CacheResponsiveness, error) {
	res := &CacheResponsiveness{}
	probes := make(chan func(context.Context, cache.Client, error))
	load.Interleave = probes
	pctx, stopProbes := context.WithCancel(ctx)
	defer stopProbes()
	var wg sync.WaitGroup
	var loadErr error
	wg.Go(func() {
		defer stopProbes() // the loaded connections are gone
		res.Load, loadErr = cache.Run(ctx, ep, load)
	})
	if !cacheSleep(pctx, c.WarmUp) {
		wg.Wait()
		return res, cacheFirstErr(ctx.Err(), loadErr)
	}
	sc := func(workers int, do func(context.Context, latency.Request) error) *latency.ScheduleConfig {
		return &latency.ScheduleConfig{Rate: c.ProbeRate, Workers: workers, Duration: load.Duration - c.WarmUp,
			Recorder: &latency.RecorderConfig{Lowest: time.Microsecond}, Spin: -1, Do: do}
	}
	phases := newCachePhaseRecorders()
	var foreign, self *latency.ScheduleResult
	wg.Go(func() {
		foreign, _ = latency.Schedule(pctx, sc(cacheForeignWorkers, func(ctx context.Context, _ latency.Request) error {
			r, err := prober.Probe(ctx)
			if err == nil {
				phases.add(r)
			}
			return err
		}))
	})
	self, _ = latency.Schedule(pctx, sc(cacheSelfWorkers, func(ctx context.Context, _ latency.Request) error {
		done := make(chan error, 1)
		probe := func(ctx context.Context, cl cache.Client, err error) {
			if err == nil {
				err = cl.Get(ctx, cacheProbeKey)
			}
			done <- err
		}
		select {
		case probes <- probe:
		case <-ctx.Done():
			return ctx.Err()
		}
		return <-done
	}))
	wg.Wait()
	res.NewConnection, res.Loaded = responsiveness.ProbeStatsOf(foreign), responsiveness.ProbeStatsOf(self)
	res.NewConnectionPhasesUs = phases.trimmedMeans()
	res.RPM = cacheRPM(res.NewConnectionPhasesUs, float64(res.Loaded.TrimmedMean)/1e3)
	return res, cacheFirstErr(ctx.Err(), loadErr)
}

// cacheSleep waits d or until ctx ends and reports whether d passed.
func cacheSleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// cacheFirstErr returns the first non-nil error.
func cacheFirstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// cacheRPM combines the trimmed means (µs) as the draft does.
func cacheRPM(foreign map[string]float64, selfUs float64) float64 {
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
	return 60e6 / us // round trips per minute
}

// cachePhaseRecorders collects the phases of new-connection probes.
type cachePhaseRecorders struct {
	mu   sync.Mutex
	recs map[string]*latency.Recorder
}

func newCachePhaseRecorders() *cachePhaseRecorders {
	return &cachePhaseRecorders{recs: map[string]*latency.Recorder{}}
}

func (p *cachePhaseRecorders) add(r *cache.ProbeResult) {
	p.mu.Lock()
	defer p.mu.Unlock()
	rec := func(name string, d time.Duration) {
		if p.recs[name] == nil {
			// A valid fixed configuration: 1 µs, cache's resolution.
			p.recs[name], _ = latency.NewRecorder(&latency.RecorderConfig{Lowest: time.Microsecond})
		}
		p.recs[name].Record(d)
	}
	rec("connect", r.Phases[cache.PhaseConnect])
	if d, ok := r.Phases[cache.PhaseTLS]; ok {
		rec("tls", d)
	}
	rec("request", r.Phases[cache.PhaseAuth]+r.Phases[cache.PhaseCommand])
}

func (p *cachePhaseRecorders) trimmedMeans() map[string]float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]float64, len(p.recs))
	for name, rec := range p.recs {
		out[name] = float64(rpm.TrimmedMean(rec.Snapshot(), rpm.Trim)) / 1e3
	}
	return out
}
