// Package slo searches for the highest rate at which a service meets a
// latency objective (an SLO such as "p99.9=200us"), with growing steps and
// then a bisection.
//
// Entry points: Parse reads an SLO; Search runs the search over any load
// (Config.Measure runs one step); PingPong runs it on latency's under-load
// ping-pong against a sockperf-compatible server. Package cache runs it on
// its open-loop workloads.
//
// It imports hdrhistogram-go and package latency; it follows netperfkit's
// conventions (docs/conventions.md): durations are time.Duration in Go and
// float microseconds in JSON. Its configuration errors wrap
// latency.ErrInvalidConfig.
package slo

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/netperfkit/netperfkit/latency"

	"github.com/netperfkit/netperfkit/latency/internal/usec"
)

// SLO is a latency objective: the Percentile (0 < Percentile < 100) of the
// response times must not exceed Max.
type SLO struct {
	Percentile float64
	Max        time.Duration
}

// str returns the SLO as Parse reads it: "p99.9=200µs" (Result.SLO).
func (s SLO) str() string {
	return "p" + strconv.FormatFloat(s.Percentile, 'f', -1, 64) + "=" + s.Max.String()
}

// Parse parses "pP=D", a percentile and a Go duration: "p99=1ms",
// "p99.9=200us".
func Parse(s string) (SLO, error) {
	p, d, ok := strings.Cut(s, "=")
	if !ok || !strings.HasPrefix(p, "p") {
		return SLO{}, fmt.Errorf("%w: SLO %q is not of the form p99=1ms", latency.ErrInvalidConfig, s)
	}
	pct, err := strconv.ParseFloat(p[1:], 64)
	if err != nil || !(pct > 0 && pct < 100) {
		return SLO{}, fmt.Errorf("%w: SLO %q: the percentile is not above 0 and below 100", latency.ErrInvalidConfig, s)
	}
	max, err := time.ParseDuration(d)
	if err != nil || max <= 0 {
		return SLO{}, fmt.Errorf("%w: SLO %q: %q is not a positive duration", latency.ErrInvalidConfig, s, d)
	}
	return SLO{Percentile: pct, Max: max}, nil
}

// Defaults of Config.
const (
	defaultSearchStart     = 1000
	defaultSearchMax       = 10_000_000
	defaultSearchGrowth    = 2
	defaultSearchStep      = time.Second
	defaultSearchPrecision = 0.05
	defaultSearchSteps     = 16
	// minDelivered is the share of the offered rate a step must achieve
	// to count as meeting the SLO: a load generator that cannot offer the
	// rate has not shown that the server meets it.
	minDelivered = 0.9
	// tailSamples is how many samples a step must hold beyond the
	// percentile it judges: a p99 of a few hundred samples is one of its
	// largest few, and of three samples their maximum.
	tailSamples = 10
	// maxStretch bounds how far a step is lengthened to hold them, in
	// StepDurations.
	maxStretch = 10
	// stepMargin lengthens a stretched step for the warm-up and cool-down a
	// Measure may leave out of it.
	stepMargin = 1.5
)

// needSamples is how many samples a step must hold to judge percentile p.
func needSamples(p float64) int64 {
	return int64(math.Ceil(tailSamples / (1 - p/100)))
}

// stepFor is the step duration at rate: StepDuration, lengthened (up to
// maxStretch of it) until the step holds the samples the SLO's percentile
// needs.
func (c *Config) stepFor(rate float64) time.Duration {
	need := float64(needSamples(c.SLO.Percentile)) * stepMargin / rate
	d := time.Duration(math.Ceil(need * float64(time.Second)))
	return min(max(c.StepDuration, d), maxStretch*c.StepDuration)
}

// Config configures Search. SLO and Measure are required (PingPong sets
// Measure itself).
type Config struct {
	SLO SLO
	// Measure runs the load at rate for d and reports what it measured in
	// a Step's Response, AchievedRate, Failed and ClientShare (the search
	// sets the other fields); an error ends the search with it and the
	// steps so far.
	Measure func(ctx context.Context, rate float64, d time.Duration) (Step, error)
	// Start is the first rate tried, per second. Zero means 1,000.
	Start float64
	// Rates tried are at most 10,000,000 per second, and the rate doubles
	// after each step that meets the SLO, until one breaks it; a bisection
	// follows.
	// StepDuration is the length of each step. Zero means 1 s. A step is
	// lengthened, up to ten times StepDuration, until it holds at least
	// 10/(1-p) requests for the SLO's percentile p (1,000 for a p99): a
	// step that still holds fewer is Unjudged, and ends the search.
	StepDuration time.Duration
	// Precision ends the bisection once the rate that broke the SLO is
	// within this fraction above the one that met it. Zero means 0.05.
	Precision float64
	// MaxSteps bounds the number of steps. Zero means 16.
	MaxSteps int
	// OnStep, when set, is called after each step on the caller's
	// goroutine.
	OnStep func(Step)
}

// Step is one step of a rate search.
type Step struct {
	// Phase is "grow" (growing from Start), "shrink" (halving after Start
	// broke the SLO) or "bisect".
	Phase string
	Rate  float64
	// Response, AchievedRate, Failed and ClientShare are what the step
	// measured (Config.Measure). Response holds the response times in
	// nanoseconds, from each request's intended start (nil in a Step read
	// from JSON, which keeps the rest).
	Response *hdrhistogram.Histogram
	// AchievedRate is the rate the step actually offered, per second.
	AchievedRate float64
	// Failed counts failed or unanswered requests; any breaks the SLO.
	Failed int64
	// ClientShare is the p99 of the client's own share of the response
	// times: its send lateness's p99 plus its receive wake-up's p99 (see
	// docs/conventions.md); zero when not measured. In JSON
	// "client_share_p99_us".
	ClientShare time.Duration
	// Percentile is the SLO's percentile of the step's response times (in
	// JSON "percentile_us", in microseconds).
	Percentile time.Duration
	Requests   int64
	// Met says whether the step met the SLO: its percentile within the
	// SLO, no failures, and at least 90% of the rate offered.
	Met bool
	// Unjudged says that the step, having offered its rate, held too few
	// requests to judge the SLO's percentile (Config.StepDuration says how
	// many it needs) and too few over the SLO to say it broke it: the
	// search ends there, the rate neither met nor broken.
	Unjudged bool
}

// Verdict is the step's verdict in one word: "met", "broke", or
// "unjudged" (too few requests for the percentile, which ends the search).
func (s Step) Verdict() string {
	switch {
	case s.Met:
		return "met"
	case s.Unjudged:
		return "unjudged"
	}
	return "broke"
}

// fields is the step's wire form, for MarshalJSON and UnmarshalJSON
// alike: its percentile and client share in float microseconds.
func (s *Step) fields() []usec.Field {
	v, o := usec.Value, usec.OmitEmpty
	return []usec.Field{v("phase", &s.Phase), v("rate", &s.Rate), v("achieved_rate", &s.AchievedRate),
		usec.Us("percentile_us", &s.Percentile), v("requests", &s.Requests), v("failed", &s.Failed), v("met", &s.Met),
		usec.UsOmitEmpty("client_share_p99_us", &s.ClientShare), o("unjudged", &s.Unjudged)}
}

// MarshalJSON writes the step with its percentile in float microseconds,
// as netperfkit has always written it.
func (s Step) MarshalJSON() ([]byte, error) { return usec.Marshal(s.fields()...) }

// UnmarshalJSON reads what MarshalJSON writes.
func (s *Step) UnmarshalJSON(b []byte) error {
	if s == nil {
		return errors.New("slo: step: UnmarshalJSON into a nil pointer")
	}
	*s = Step{}
	if err := usec.Unmarshal(b, s.fields()...); err != nil {
		return fmt.Errorf("slo: step: %w", err)
	}
	return nil
}

// Result is the outcome of Search.
type Result struct {
	SLO string `json:"slo"`
	// Rate is the highest rate that met the SLO (0 when none did), and
	// BrokeAt the lowest rate that broke it (0 when none did, up to Max).
	Rate    float64 `json:"rate"`
	BrokeAt float64 `json:"broke_at"`
	// Steps holds every step in order.
	Steps []Step `json:"steps"`
}

func (c *Config) normalize() (Config, error) {
	var s Config
	if c != nil {
		s = *c
	}
	switch {
	case c == nil:
		return s, fmt.Errorf("%w: nil *slo.Config (SLO and Measure are required)", latency.ErrInvalidConfig)
	case !(s.SLO.Percentile > 0 && s.SLO.Percentile < 100) || s.SLO.Max <= 0:
		return s, fmt.Errorf("%w: SLO %v needs a percentile between 0 and 100 and a positive maximum", latency.ErrInvalidConfig, s.SLO.str())
	case s.Measure == nil:
		return s, fmt.Errorf("%w: Measure is nil", latency.ErrInvalidConfig)
	}
	for _, f := range []struct {
		name string
		neg  bool
		v    any
	}{{"Start", !(s.Start >= 0), s.Start},
		{"StepDuration", s.StepDuration < 0, s.StepDuration}, {"Precision", !(s.Precision >= 0), s.Precision},
		{"MaxSteps", s.MaxSteps < 0, s.MaxSteps}} {
		if f.neg {
			return s, fmt.Errorf("%w: %s %v is negative or not a number", latency.ErrInvalidConfig, f.name, f.v)
		}
	}
	s.Start = orPositive(s.Start, defaultSearchStart)
	s.Precision = orPositive(s.Precision, defaultSearchPrecision)
	if s.StepDuration <= 0 {
		s.StepDuration = defaultSearchStep
	}
	if s.MaxSteps <= 0 {
		s.MaxSteps = defaultSearchSteps
	}
	if s.Start > defaultSearchMax {
		return s, fmt.Errorf("%w: Start %v exceeds the maximum rate %v", latency.ErrInvalidConfig, s.Start, float64(defaultSearchMax))
	}
	return s, nil
}

func orPositive(v, def float64) float64 {
	if v > 0 {
		return v
	}
	return def
}

// Search searches for the highest rate whose response-time percentile
// meets cfg.SLO. It measures (cfg.Measure) at Start, then at rates growing
// by Growth until one breaks the SLO (or, if Start breaks it, at rates
// halving until one meets it), then bisects between the highest rate that
// met it and the lowest that broke it. An error from Measure ends the
// search with it and the steps so far. When ctx ends, Search returns the
// steps so far and ctx.Err() (the interrupted step is not counted). The
// error wraps latency.ErrInvalidConfig, naming the field, for a nil cfg, a nil
// Measure, an invalid SLO or a negative field. The result is never nil:
// after an error it holds the steps before it (none after a configuration
// error).
func Search(ctx context.Context, cfg *Config) (*Result, error) {
	res := &Result{}
	if ctx == nil {
		return res, errors.New("slo: nil context.Context")
	}
	c, err := cfg.normalize()
	if err != nil {
		return res, err
	}
	res.SLO = c.SLO.str()
	try := func(phase string, rate float64) (bool, error) {
		m, err := c.Measure(ctx, rate, c.stepFor(rate))
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		if err != nil {
			return false, err
		}
		st := judge(&c.SLO, phase, rate, m)
		res.Steps = append(res.Steps, st)
		if c.OnStep != nil && st.Unjudged {
			c.OnStep(st)
		}
		if st.Unjudged {
			return false, errUnjudged
		}
		if st.Met {
			res.Rate = max(res.Rate, rate)
		} else if res.BrokeAt == 0 || rate < res.BrokeAt {
			res.BrokeAt = rate
		}
		if c.OnStep != nil {
			c.OnStep(st)
		}
		return st.Met, nil
	}
	if err := search(&c, try); err != nil && !errors.Is(err, errUnjudged) {
		return res, err
	}
	return res, nil
}

// errUnjudged ends a search at a step too short to judge.
var errUnjudged = errors.New("slo: step too short to judge its percentile")

// search walks the rates: grow (or shrink), then bisect.
func search(c *Config, try func(string, float64) (bool, error)) error {
	lo, hi := 0.0, 0.0 // highest rate met, lowest broken
	rate, phase := c.Start, "grow"
	for range c.MaxSteps {
		if lo > 0 && hi > 0 {
			if hi <= lo*(1+c.Precision) {
				return nil
			}
			rate, phase = (lo+hi)/2, "bisect"
		}
		met, err := try(phase, rate)
		if err != nil {
			return err
		}
		if met {
			lo = rate
		} else {
			hi = rate
		}
		switch {
		case lo > 0 && hi > 0: // bisect next
		case met:
			if rate >= defaultSearchMax {
				return nil
			}
			rate = min(rate*defaultSearchGrowth, defaultSearchMax)
		default:
			rate, phase = rate/2, "shrink"
			if rate < 1 {
				return nil
			}
		}
	}
	return nil
}

// judge turns a measurement into a step.
func judge(slo *SLO, phase string, rate float64, m Step) Step {
	st := Step{Phase: phase, Rate: rate, Response: m.Response, AchievedRate: m.AchievedRate, Failed: m.Failed, ClientShare: m.ClientShare}
	delivered := m.AchievedRate >= minDelivered*rate
	if m.Response != nil && m.Response.TotalCount() > 0 {
		st.Requests = m.Response.TotalCount()
		p := m.Response.ValueAtQuantile(slo.Percentile)
		st.Percentile = time.Duration(p)
		st.Met = time.Duration(p) <= slo.Max && m.Failed == 0 && delivered
	}
	// A step that offered its rate without failures but holds too few
	// requests cannot say that the SLO was met. It can say that it broke
	// it when tailSamples of them exceed it (more than the percentile
	// allows, since they are fewer than needSamples). A failure or an
	// undelivered rate breaks it whatever the count.
	if n := st.Requests; delivered && m.Failed == 0 && n < needSamples(slo.Percentile) {
		st.Met = false
		st.Unjudged = n <= tailSamples || time.Duration(m.Response.ValueAtQuantile(100*(1-float64(tailSamples)/float64(n)))) <= slo.Max
	}
	if math.IsNaN(st.AchievedRate) {
		st.AchievedRate = 0
	}
	return st
}

// PingPong searches for the highest under-load rate (messages per
// second) at which the round trips to a sockperf-compatible server at addr
// meet search.SLO, with Search: each step is a latency.PingPong run with
// MPS set to the step's rate (search.Measure is ignored). cfg (nil means
// defaults) sets everything else, with these changes for a step: a zero
// ReplyEvery means 1, so that the percentile rests on every message; a zero
// WarmUp or CoolDown means a tenth of the step (at most latency's defaults
// of 400 ms and 50 ms), and only the histogram is kept. Dropped replies
// break the SLO, and so does a step with no reply at all once an earlier
// step was answered; no reply to the first step ends the search with an
// error wrapping latency.ErrNoReply (nothing answers at addr).
func PingPong(ctx context.Context, addr string, cfg *latency.PingPongConfig, search *Config) (*Result, error) {
	if search == nil {
		return &Result{}, fmt.Errorf("%w: nil search *slo.Config (SLO is required)", latency.ErrInvalidConfig)
	}
	var base latency.PingPongConfig
	if cfg != nil {
		base = *cfg
	}
	sc := *search
	var answered bool
	sc.Measure = func(ctx context.Context, rate float64, d time.Duration) (Step, error) {
		c := base
		c.MPS, c.Duration, c.Count, c.DiscardSamples = max(int(math.Round(rate)), 1), d, 0, true
		if c.ReplyEvery == 0 {
			c.ReplyEvery = 1
		}
		if c.WarmUp == 0 {
			c.WarmUp = min(d/10, defaultWarmUp)
		}
		if c.CoolDown == 0 {
			c.CoolDown = min(d/10, defaultCoolDown)
		}
		res, err := latency.PingPong(ctx, addr, &c)
		if errors.Is(err, latency.ErrNoReply) && answered && ctx.Err() == nil {
			// A server that answered earlier steps and none of this
			// one's: every request failed, which breaks the SLO.
			return Step{AchievedRate: res.AchievedMPS, Failed: max(res.Dropped, 1)}, nil
		}
		if err != nil {
			return Step{}, err
		}
		answered = true
		if res.Recorder == nil {
			return Step{}, errors.New("slo: ping-pong step without a histogram")
		}
		var share time.Duration
		if res.SendLateness != nil {
			share += res.SendLateness.P99
		}
		if res.ReceiveWake != nil {
			share += res.ReceiveWake.P99
		}
		return Step{Response: res.Recorder.Snapshot(), AchievedRate: res.AchievedMPS, Failed: res.Dropped, ClientShare: share}, nil
	}
	return Search(ctx, &sc)
}

// latency's default warm-up and cool-down of a timed run.
const (
	defaultWarmUp   = 400 * time.Millisecond
	defaultCoolDown = 50 * time.Millisecond
)
