package cache_test

import (
	"context"
	"errors"
	"math"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/latency"
)

// callDeadline bounds every call of the API walk: bad input must be turned
// down at once, and a call that needs a server must give up on a closed
// port at once.
const callDeadline = time.Second

// within runs f under callDeadline and fails the test if f panics or does
// not return in time.
func within(t *testing.T, name string, f func()) {
	t.Helper()
	done := make(chan any, 1)
	go func() {
		defer func() { done <- recover() }()
		f()
	}()
	select {
	case p := <-done:
		require.Nil(t, p, "%s panicked", name)
	case <-time.After(callDeadline):
		require.FailNow(t, name+" did not return within "+callDeadline.String())
	}
}

// closedAddr returns a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// TestAPIBadInput calls every exported function and method with nil, zero,
// negative and out-of-range input: each returns within a second, without a
// panic, with an error that names the field or argument.
func TestAPIBadInput(t *testing.T) {
	bg := context.Background()
	addr := closedAddr(t)
	ep := &cache.Endpoint{Addr: addr}
	prober, err := cache.NewProber(ep)
	require.NoError(t, err)
	var nilCtx context.Context

	endpoints := []struct {
		ep   *cache.Endpoint
		want string
	}{
		{nil, "nil Endpoint"},
		{&cache.Endpoint{}, "Endpoint.Addr"},
		{&cache.Endpoint{Addr: "no-port"}, "Endpoint.Addr"},
		{&cache.Endpoint{Addr: addr, ConnectTimeout: -time.Second}, "Endpoint.ConnectTimeout"},
		{&cache.Endpoint{Addr: addr, RequestTimeout: -time.Second}, "Endpoint.RequestTimeout"},
		{&cache.Endpoint{Addr: addr, TLSVersion: 0x0301}, "Endpoint.TLSVersion 0x301"},
	}
	workloads := []struct {
		cfg  *cache.WorkloadConfig
		want string
	}{
		{&cache.WorkloadConfig{Duration: -time.Second}, "WorkloadConfig.Duration"},
		{&cache.WorkloadConfig{Workers: -1}, "WorkloadConfig.Workers"},
		{&cache.WorkloadConfig{Rate: -1}, "WorkloadConfig.Rate"},
		{&cache.WorkloadConfig{Rate: math.NaN()}, "WorkloadConfig.Rate"},
		{&cache.WorkloadConfig{Rate: math.Inf(1)}, "WorkloadConfig.Rate"},
		{&cache.WorkloadConfig{MaxOps: -1}, "WorkloadConfig.MaxOps"},
		{&cache.WorkloadConfig{GetWeight: -1}, "WorkloadConfig.GetWeight"},
		{&cache.WorkloadConfig{SetWeight: -1}, "WorkloadConfig.SetWeight"},
		{&cache.WorkloadConfig{KeySpace: -1}, "WorkloadConfig.KeySpace"},
		{&cache.WorkloadConfig{ValueSize: -1}, "WorkloadConfig.ValueSize"},
		{&cache.WorkloadConfig{Mode: "sometimes"}, "WorkloadConfig.Mode"},
		{&cache.WorkloadConfig{Arrival: 7}, "WorkloadConfig.Arrival 7"},
		// Above each maximum, named in the field's own unit.
		{&cache.WorkloadConfig{ValueSize: 1 << 40, Duration: 200 * time.Millisecond}, "WorkloadConfig.ValueSize 1099511627776 bytes is above the maximum of 67108864 bytes"},
		{&cache.WorkloadConfig{ValueSize: 64<<20 + 1}, "WorkloadConfig.ValueSize 67108865 bytes"},
		{&cache.WorkloadConfig{Workers: 10_001}, "WorkloadConfig.Workers 10001 is above the maximum of 10000"},
		{&cache.WorkloadConfig{Workers: math.MaxInt}, "WorkloadConfig.Workers"},
		{&cache.WorkloadConfig{Rate: 1e12}, "WorkloadConfig.Rate 1e+12 per second is above the maximum"},
		{&cache.WorkloadConfig{KeySpace: math.MaxInt32 + 1}, "WorkloadConfig.KeySpace 2147483648 keys is above the maximum"},
		{&cache.WorkloadConfig{KeyPrefix: strings.Repeat("k", 513)}, "WorkloadConfig.KeyPrefix is 513 bytes long"},
		{&cache.WorkloadConfig{GetWeight: math.MaxInt, SetWeight: 1}, "WorkloadConfig.GetWeight"},
		{&cache.WorkloadConfig{SetWeight: 1_000_001}, "WorkloadConfig.SetWeight 1000001"},
	}
	probes := []struct {
		cfg  *cache.ProbeConfig
		want string
	}{
		{&cache.ProbeConfig{Probes: -1}, "ProbeConfig.Probes"},
		{cache.ProbeConfigWith(0, -1, 0, nil, nil), "ProbeConfig.concurrency"},
		{cache.ProbeConfigWith(0, 10_001, 0, nil, nil), "ProbeConfig.concurrency 10001 is above the maximum"},
		{cache.ProbeConfigWith(0, 0, -time.Second, nil, nil), "ProbeConfig.interval"},
		{cache.ProbeConfigWith(0, 0, 0, []string{""}, nil), "ProbeConfig.command"},
	}

	type call struct {
		name string
		f    func() error
		want string
		// config: the error wraps cache.ErrInvalidConfig.
		config bool
	}
	calls := []call{
		{"Run(nil ctx)", func() error { _, err := cache.Run(nilCtx, ep, nil); return err }, "context", false},
		{"Prober.Probe(nil ctx)", func() error { _, err := prober.Probe(nilCtx); return err }, "context", false},
		{"Prober.Run(nil ctx)", func() error { _, err := prober.Run(nilCtx, nil); return err }, "context", false},
		{"nil Prober.Probe", func() error { _, err := (*cache.Prober)(nil).Probe(bg); return err }, "Prober", false},
		{"zero Prober.Probe", func() error { _, err := (&cache.Prober{}).Probe(bg); return err }, "Prober", false},
		{"nil Prober.Run", func() error { _, err := (*cache.Prober)(nil).Run(bg, nil); return err }, "Prober", false},
		{"zero Prober.Run", func() error { _, err := (&cache.Prober{}).Run(bg, nil); return err }, "Prober", false},
		// A closed port: refused at once, before any run starts.
		{"Run(closed port)", func() error { _, err := cache.Run(bg, ep, nil); return err }, "connect_refused", false},
		{"Prober.Probe(closed port)", func() error { _, err := prober.Probe(bg); return err }, "connect_refused", false},
	}
	for _, e := range endpoints {
		calls = append(calls,
			call{"NewProber(" + e.want + ")", func() error { _, err := cache.NewProber(e.ep); return err }, e.want, true},
			call{"Run(" + e.want + ")", func() error { _, err := cache.Run(bg, e.ep, nil); return err }, e.want, true})
	}
	for _, w := range workloads {
		calls = append(calls, call{"Run(" + w.want + ")", func() error { _, err := cache.Run(bg, ep, w.cfg); return err }, w.want, true})
	}
	for _, p := range probes {
		calls = append(calls, call{"Prober.Run(" + p.want + ")", func() error { _, err := prober.Run(bg, p.cfg); return err }, p.want, true})
	}
	for _, c := range calls {
		within(t, c.name, func() {
			err := c.f()
			require.Error(t, err, c.name)
			assert.ErrorContains(t, err, c.want, c.name)
			assert.Regexp(t, `^cache: `, err.Error(), c.name)
			if c.config {
				assert.ErrorIs(t, err, cache.ErrInvalidConfig, c.name)
			} else {
				assert.NotErrorIs(t, err, cache.ErrInvalidConfig, c.name)
			}
		})
	}
}

// Each maximum is itself accepted: a run at it gets as far as the endpoint
// check (a closed port here), before anything is allocated for the run.
func TestAPILimitsAccepted(t *testing.T) {
	ep := &cache.Endpoint{Addr: closedAddr(t)}
	for _, cfg := range []*cache.WorkloadConfig{
		{ValueSize: 64 << 20}, {Workers: 10_000}, {Rate: 1e7}, {KeySpace: math.MaxInt32},
		{KeyPrefix: strings.Repeat("k", 512)}, {GetWeight: 1_000_000, SetWeight: 1_000_000},
		{Arrival: latency.ArrivalPoisson, Rate: 1},
	} {
		within(t, "Run at a maximum", func() {
			r, err := cache.Run(context.Background(), ep, cfg)
			require.ErrorIs(t, err, cache.ErrConnectRefused, "%+v", cfg)
			assert.NotErrorIs(t, err, cache.ErrInvalidConfig)
			require.NotNil(t, r)
		})
	}
	p, err := cache.NewProber(ep)
	require.NoError(t, err)
	within(t, "Prober.Run at the maximum Concurrency", func() {
		_, err := p.Run(context.Background(), cache.ProbeConfigWith(2, 10_000, 0, nil, nil))
		require.ErrorIs(t, err, cache.ErrConnectRefused)
	})
}

// Results after an error are never nil (docs/conventions.md): Run,
// Prober.Run and Prober.Probe return a result whose fields and methods can
// be read after an invalid configuration, a refused connection, a
// cancelled context, a nil context or a zero Prober, and the error says
// which (errors.Is).
func TestAPIResultsNeverNil(t *testing.T) {
	bg := context.Background()
	refused := &cache.Endpoint{Addr: closedAddr(t)}
	silent := &cache.Endpoint{Addr: silentListener(t)}
	cancelled, cancel := context.WithCancel(bg)
	cancel()
	var nilCtx context.Context
	cases := []struct {
		name string
		ctx  context.Context
		ep   *cache.Endpoint
		cfg  *cache.WorkloadConfig
		pcfg *cache.ProbeConfig
		is   error // nil: any error
	}{
		{"refused", bg, refused, nil, &cache.ProbeConfig{Probes: 3}, cache.ErrConnectRefused},
		{"cancelled", cancelled, silent, nil, &cache.ProbeConfig{Probes: 3}, context.Canceled},
		{"invalid config", bg, refused, &cache.WorkloadConfig{ValueSize: 1 << 40}, cache.ProbeConfigWith(0, 1<<40, 0, nil, nil), cache.ErrInvalidConfig},
		{"nil context", nilCtx, refused, nil, nil, nil},
	}
	for _, c := range cases {
		within(t, "Run "+c.name, func() {
			r, err := cache.Run(c.ctx, c.ep, c.cfg)
			require.Error(t, err)
			if c.is != nil {
				require.ErrorIs(t, err, c.is)
			}
			require.NotNil(t, r, c.name)
			assert.Equal(t, "resp", r.Engine)
			assert.Equal(t, cache.Pooled, r.Mode)
			assert.Zero(t, r.Attempts+r.Succeeded+r.Errors+r.ErrorsByKind[cache.ErrTimeout])
			assert.Zero(t, r.Latency.P99)
			assert.Nil(t, r.Histogram)
			assert.Empty(t, r.FirstError)
			assert.False(t, r.Failed(), "no operation ran, so none failed")
		})
		p, err := cache.NewProber(c.ep)
		require.NoError(t, err)
		within(t, "Prober.Run "+c.name, func() {
			sum, err := p.Run(c.ctx, c.pcfg)
			require.Error(t, err)
			if c.is != nil {
				require.ErrorIs(t, err, c.is)
			}
			require.NotNil(t, sum, c.name)
			assert.Zero(t, sum.Succeeded)
			assert.Zero(t, sum.Phases[cache.PhaseConnect].P50)
			assert.Zero(t, sum.Total.Observations)
			assert.Equal(t, sum.Probes, sum.ErrorsByKind[cache.ErrConnectRefused])
		})
		within(t, "Prober.Probe "+c.name, func() {
			r, err := p.Probe(c.ctx)
			require.Error(t, err)
			require.NotNil(t, r, c.name)
			assert.Zero(t, r.Phases[cache.PhaseCommand])
			assert.Equal(t, err, r.Err)
		})
	}
	for _, p := range []*cache.Prober{nil, {}} {
		within(t, "zero Prober", func() {
			sum, err := p.Run(bg, nil)
			require.Error(t, err)
			require.NotNil(t, sum)
			assert.Zero(t, sum.Probes)
			r, err := p.Probe(bg)
			require.Error(t, err)
			require.NotNil(t, r)
			assert.Empty(t, r.Addr)
		})
	}
	var nilResult *cache.RunResult
	assert.True(t, nilResult.Failed(), "a nil result is a failed one")
}

// The calls whose bad input has a documented result rather than an error.
func TestAPIDocumentedZeroResults(t *testing.T) {
	within(t, "Prober.Run(closed port)", func() {
		p, err := cache.NewProber(&cache.Endpoint{Addr: closedAddr(t)})
		require.NoError(t, err)
		sum, err := p.Run(context.Background(), &cache.ProbeConfig{Probes: 3})
		require.ErrorIs(t, err, cache.ErrConnectRefused, "no probe succeeded: an error, with the first probe's")
		assert.ErrorContains(t, err, "all 3 probes failed")
		assert.Equal(t, 3, sum.Probes, "each failed probe is counted")
		assert.Zero(t, sum.Succeeded)
		assert.Equal(t, map[cache.ErrorKind]int{cache.ErrConnectRefused: 3}, sum.ErrorsByKind)
	})
	within(t, "WithClientTrace(nil, nil, nil)", func() {
		var nilCtx context.Context
		ctx := cache.WithClientTrace(nilCtx, nil, nil)
		require.NotNil(t, ctx)
		ctx = cache.WithClientTrace(ctx, nil, nil)
		require.NoError(t, ctx.Err())
	})
	within(t, "nil *Error", func() {
		var e *cache.Error
		assert.Equal(t, "cache: <nil>", e.Error())
		assert.NoError(t, e.Unwrap())
		assert.False(t, e.Is(cache.ErrAuth))
		assert.False(t, errors.Is(e, cache.ErrAuth))
	})
	within(t, "zero values", func() {
		assert.Equal(t, " cluster=false tls=false auth=none", cache.Endpoint{}.String())
		assert.Empty(t, cache.Secret("").Reveal())
		assert.Empty(t, cache.ErrorKind("").Error(), "a kind reads as itself")
	})
}
