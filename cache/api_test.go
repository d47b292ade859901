package cache_test

import (
	"context"
	"errors"
	"math"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/cache"
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
		{&cache.Endpoint{Addr: addr, MinTLSVersion: 0x0304, MaxTLSVersion: 0x0303}, "Endpoint.MinTLSVersion"},
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
	}
	probes := []struct {
		cfg  *cache.ProbeConfig
		want string
	}{
		{&cache.ProbeConfig{Probes: -1}, "ProbeConfig.Probes"},
		{&cache.ProbeConfig{Concurrency: -1}, "ProbeConfig.Concurrency"},
		{&cache.ProbeConfig{Interval: -time.Second}, "ProbeConfig.Interval"},
		{&cache.ProbeConfig{Command: []string{""}}, "ProbeConfig.Command"},
	}

	type call struct {
		name string
		f    func() error
		want string
	}
	calls := []call{
		{"Run(nil ctx)", func() error { _, err := cache.Run(nilCtx, ep, nil); return err }, "context"},
		{"Prober.Probe(nil ctx)", func() error { _, err := prober.Probe(nilCtx); return err }, "context"},
		{"Prober.Run(nil ctx)", func() error { _, err := prober.Run(nilCtx, nil); return err }, "context"},
		{"nil Prober.Probe", func() error { _, err := (*cache.Prober)(nil).Probe(bg); return err }, "Prober"},
		{"zero Prober.Probe", func() error { _, err := (&cache.Prober{}).Probe(bg); return err }, "Prober"},
		{"nil Prober.Run", func() error { _, err := (*cache.Prober)(nil).Run(bg, nil); return err }, "Prober"},
		{"zero Prober.Run", func() error { _, err := (&cache.Prober{}).Run(bg, nil); return err }, "Prober"},
		// A closed port: refused at once, before any run starts.
		{"Run(closed port)", func() error { _, err := cache.Run(bg, ep, nil); return err }, "connect_refused"},
		{"Prober.Probe(closed port)", func() error { _, err := prober.Probe(bg); return err }, "connect_refused"},
	}
	for _, e := range endpoints {
		calls = append(calls,
			call{"NewProber(" + e.want + ")", func() error { _, err := cache.NewProber(e.ep); return err }, e.want},
			call{"Run(" + e.want + ")", func() error { _, err := cache.Run(bg, e.ep, nil); return err }, e.want})
	}
	for _, w := range workloads {
		calls = append(calls, call{"Run(" + w.want + ")", func() error { _, err := cache.Run(bg, ep, w.cfg); return err }, w.want})
	}
	for _, p := range probes {
		calls = append(calls, call{"Prober.Run(" + p.want + ")", func() error { _, err := prober.Run(bg, p.cfg); return err }, p.want})
	}
	for _, c := range calls {
		within(t, c.name, func() {
			err := c.f()
			require.Error(t, err, c.name)
			assert.ErrorContains(t, err, c.want, c.name)
			assert.Regexp(t, `^cache: `, err.Error(), c.name)
		})
	}
}

// The calls whose bad input has a documented result rather than an error.
func TestAPIDocumentedZeroResults(t *testing.T) {
	within(t, "Prober.Run(closed port)", func() {
		p, err := cache.NewProber(&cache.Endpoint{Addr: closedAddr(t)})
		require.NoError(t, err)
		sum, err := p.Run(context.Background(), &cache.ProbeConfig{Probes: 3})
		require.NoError(t, err, "failed probes are counted, not fatal")
		assert.Equal(t, 3, sum.Probes)
		assert.Zero(t, sum.Succeeded)
		assert.Equal(t, map[cache.ErrorKind]int{cache.ErrConnectRefused: 3}, sum.ErrorsByKind)
	})
	within(t, "WithClientTrace(nil, nil)", func() {
		var nilCtx context.Context
		ctx := cache.WithClientTrace(nilCtx, nil)
		require.NotNil(t, ctx)
		ctx = cache.WithClientTrace(ctx, &cache.ClientTrace{})
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
		assert.Equal(t, "cache: ", cache.ErrorKind("").Error())
	})
}
