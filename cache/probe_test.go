package cache_test

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/cache/cachetest"
)

func endpointFor(s *cachetest.Server) *cache.Endpoint { return s.Endpoint() }

func probeOnce(t *testing.T, ep *cache.Endpoint) (*cache.ProbeResult, error) {
	t.Helper()
	p, err := cache.NewProber(ep)
	require.NoError(t, err)
	return p.Probe(context.Background())
}

func TestProbePlainWithDNS(t *testing.T) {
	s := cachetest.NewServer(t, nil)
	ep := endpointFor(s)
	_, port, _ := net.SplitHostPort(s.Addr)
	ep.Addr = "localhost:" + port
	r, err := probeOnce(t, ep)
	require.NoError(t, err)
	assert.Positive(t, r.Phases[cache.PhaseDNS])
	assert.Positive(t, r.Phases[cache.PhaseConnect])
	assert.Zero(t, r.Phases[cache.PhaseTLS])
	assert.Zero(t, r.Phases[cache.PhaseAuth])
	assert.Zero(t, r.Phases[cache.PhaseClusterSlots])
	assert.Positive(t, r.Phases[cache.PhaseCommand])
	assert.Positive(t, r.Phases[cache.PhaseClose])
	assert.Equal(t, s.Addr, r.Addr)
	assert.Empty(t, r.TLSVersion)
	var sum time.Duration
	for _, d := range r.Phases {
		sum += d
	}
	assert.LessOrEqual(t, sum, r.Total)

	// An IP literal needs no DNS.
	ep.Addr = s.Addr
	r, err = probeOnce(t, ep)
	require.NoError(t, err)
	assert.Zero(t, r.Phases[cache.PhaseDNS])
}

func TestProbeTLSWithACL(t *testing.T) {
	s := cachetest.NewServer(t, &cachetest.Config{TLS: true, User: "bench", Password: "pw-123"})
	ep := endpointFor(s)
	for _, v := range []uint16{0x0303, 0x0304} { // TLS 1.2, TLS 1.3
		ep.TLSVersion = v
		r, err := probeOnce(t, ep)
		require.NoError(t, err)
		assert.Zero(t, r.Phases[cache.PhaseDNS])
		assert.Positive(t, r.Phases[cache.PhaseConnect])
		assert.Positive(t, r.Phases[cache.PhaseTLS])
		assert.Positive(t, r.Phases[cache.PhaseAuth])
		assert.Zero(t, r.Phases[cache.PhaseClusterSlots])
		assert.Positive(t, r.Phases[cache.PhaseCommand])
		assert.Equal(t, map[uint16]string{0x0303: "TLS 1.2", 0x0304: "TLS 1.3"}[v], r.TLSVersion)
	}

	t.Run("wrong password", func(t *testing.T) {
		bad := *endpointFor(s)
		bad.Password = "nope"
		r, err := probeOnce(t, &bad)
		require.ErrorIs(t, err, cache.ErrWrongPass)
		assert.Equal(t, cache.PhaseAuth, errPhase(r))
		assert.Positive(t, r.Phases[cache.PhaseTLS])
		assert.Zero(t, r.Phases[cache.PhaseCommand])
		assert.NotContains(t, err.Error(), "nope")
	})
	t.Run("no credentials", func(t *testing.T) {
		bad := *endpointFor(s)
		bad.User, bad.Password = "", ""
		r, err := probeOnce(t, &bad)
		require.ErrorIs(t, err, cache.ErrNoAuth)
		assert.Equal(t, cache.PhaseCommand, errPhase(r))
	})
	t.Run("missing CA", func(t *testing.T) {
		bad := *endpointFor(s)
		bad.CACertPEM = nil
		r, err := probeOnce(t, &bad)
		require.ErrorIs(t, err, cache.ErrTLSVerify)
		assert.Equal(t, cache.PhaseTLS, errPhase(r))
		assert.Zero(t, r.Phases[cache.PhaseAuth])
	})
	t.Run("insecure when asked", func(t *testing.T) {
		ins := *endpointFor(s)
		ins.CACertPEM, ins.InsecureSkipVerify = nil, true
		_, err := probeOnce(t, &ins)
		require.NoError(t, err)
	})
	t.Run("wrong server name", func(t *testing.T) {
		bad := *endpointFor(s)
		bad.ServerName = "cache.example.com"
		_, err := probeOnce(t, &bad)
		require.ErrorIs(t, err, cache.ErrTLSVerify)
	})
	t.Run("plaintext to a TLS port", func(t *testing.T) {
		bad := *endpointFor(s)
		bad.TLS = false
		bad.RequestTimeout = 300 * time.Millisecond
		bad.ConnectTimeout = 300 * time.Millisecond
		_, err := probeOnce(t, &bad)
		require.Error(t, err)
		assert.NotErrorIs(t, err, cache.ErrWrongPass)
	})
}

func TestProbeCluster(t *testing.T) {
	s := cachetest.NewServer(t, &cachetest.Config{Cluster: true})
	p, err := cache.NewProber(endpointFor(s))
	require.NoError(t, err)
	sum, err := p.Run(context.Background(), cache.ProbeConfigWith(20, 2, 0, nil, nil))
	require.NoError(t, err)
	assert.Equal(t, 20, sum.Probes)
	assert.Equal(t, 20, sum.Succeeded)
	assert.Equal(t, sum.Probes, sum.Succeeded)
	assert.Equal(t, int64(20), sum.Phases[cache.PhaseClusterSlots].Observations)
	assert.Positive(t, float64(sum.Phases[cache.PhaseClusterSlots].P50)/1e3)
	assert.Zero(t, sum.Phases[cache.PhaseTLS].Observations)
	assert.Zero(t, sum.Phases[cache.PhaseAuth].Observations)
	assert.Equal(t, int64(20), sum.Total.Observations)
}

func TestProbeStoppedServer(t *testing.T) {
	s := cachetest.NewServer(t, nil)
	s.Kill()
	r, err := probeOnce(t, endpointFor(s))
	require.ErrorIs(t, err, cache.ErrConnectRefused)
	require.ErrorIs(t, err, syscall.ECONNREFUSED)
	assert.Equal(t, cache.PhaseConnect, errPhase(r))
}

func TestProbeDNSFailure(t *testing.T) {
	r, err := probeOnce(t, &cache.Endpoint{Addr: "no-such-host.invalid:6379", ConnectTimeout: 2 * time.Second})
	require.ErrorIs(t, err, cache.ErrDNS)
	assert.Equal(t, cache.PhaseDNS, errPhase(r))
}

// A server that accepts and never answers: the command times out,
// classified as a timeout, not a refusal. (TestProbeConnectTimeout, on
// linux, times out the TCP connect itself.) The server holds the
// connection open until the test ends, so that no close, however late the
// client's timer fires, can beat the timeout.
func TestProbeCommandTimeout(t *testing.T) {
	r, err := probeOnce(t, &cache.Endpoint{Addr: silentListener(t), RequestTimeout: 100 * time.Millisecond})
	require.ErrorIs(t, err, cache.ErrTimeout)
	assert.Equal(t, cache.PhaseCommand, errPhase(r))
}

// The user's hooks see every phase, in order, with the same durations the
// prober reports, and a trace shared by concurrent probes is called
// concurrently (the race detector checks the contract's lock).
func TestProbeTraceHooks(t *testing.T) {
	s := cachetest.NewServer(t, &cachetest.Config{TLS: true, User: "u", Password: "p"})
	var (
		mu     sync.Mutex
		phases []cache.Phase
		durs   = map[cache.Phase]time.Duration{}
	)
	start := func(i cache.PhaseInfo) {
		mu.Lock()
		phases = append(phases, i.Phase+"+")
		mu.Unlock()
	}
	done := func(i cache.PhaseInfo) {
		mu.Lock()
		phases = append(phases, i.Phase+"-")
		durs[i.Phase] = i.Duration
		mu.Unlock()
	}
	ctx := cache.WithClientTrace(context.Background(), start, done)
	p, err := cache.NewProber(endpointFor(s))
	require.NoError(t, err)
	r, err := p.Probe(ctx)
	require.NoError(t, err)
	assert.Equal(t, []cache.Phase{"connect+", "connect-", "tls+", "tls-", "auth+", "auth-", "command+", "command-", "close+", "close-"}, phases)
	assert.Equal(t, r.Phases[cache.PhaseConnect], durs[cache.PhaseConnect])
	assert.Equal(t, r.Phases[cache.PhaseTLS], durs[cache.PhaseTLS])
	assert.Equal(t, r.Phases[cache.PhaseAuth], durs[cache.PhaseAuth])
	assert.Equal(t, r.Phases[cache.PhaseCommand], durs[cache.PhaseCommand])

	phases = nil
	sum, err := p.Run(ctx, cache.ProbeConfigWith(8, 4, 0, nil, nil))
	require.NoError(t, err)
	assert.Equal(t, 8, sum.Succeeded)
	assert.Len(t, phases, 8*10)
}

func TestProbeRunCountsErrorsAndPaces(t *testing.T) {
	s := cachetest.NewServer(t, nil)
	addr := s.Addr
	s.Kill()
	p, err := cache.NewProber(&cache.Endpoint{Addr: addr})
	require.NoError(t, err)
	var n int
	begin := time.Now()
	sum, err := p.Run(context.Background(), cache.ProbeConfigWith(5, 0, 20*time.Millisecond, nil, func(cache.ProbeResult) { n++ }))
	require.ErrorIs(t, err, cache.ErrConnectRefused, "every probe failed: an error wrapping the first")
	assert.GreaterOrEqual(t, time.Since(begin), 80*time.Millisecond, "probe 4 starts 4 intervals in")
	assert.Equal(t, 5, n)
	assert.Zero(t, sum.Succeeded)
	assert.Equal(t, map[cache.ErrorKind]int{cache.ErrConnectRefused: 5}, sum.ErrorsByKind)
	assert.Contains(t, sum.ErrorExamples[cache.ErrConnectRefused], "refused")
	assert.Zero(t, sum.Total.Observations)
}

func TestProbeRunCancel(t *testing.T) {
	s := cachetest.NewServer(t, nil)
	p, err := cache.NewProber(endpointFor(s))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	sum, err := p.Run(ctx, cache.ProbeConfigWith(1000, 0, 50*time.Millisecond, nil, nil))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, sum.Probes, 10)
	assert.Equal(t, sum.Probes, sum.Succeeded)
}

// Cancelling probes stuck on a peer that stopped answering, in the command,
// AUTH and TLS phases, returns promptly with the probes so far.
func TestProbeRunCancelSilentPeer(t *testing.T) {
	addr := silentListener(t)
	for name, ep := range map[string]*cache.Endpoint{
		"command": {Addr: addr},
		"auth":    {Addr: addr, Password: "pw"},
		"tls":     {Addr: addr, TLS: true, InsecureSkipVerify: true},
	} {
		t.Run(name, func(t *testing.T) {
			ep.ConnectTimeout, ep.RequestTimeout = time.Minute, time.Minute
			p, err := cache.NewProber(ep)
			require.NoError(t, err)
			ctx, at := cancelAfter(t, 200*time.Millisecond)
			sum, err := p.Run(ctx, cache.ProbeConfigWith(10, 2, 0, nil, nil))
			require.ErrorIs(t, err, context.Canceled)
			assert.Less(t, time.Since(at()), cancelBound)
			require.NotNil(t, sum)
			assert.Zero(t, sum.Probes, "the probes in flight are not counted")

			ctx, at = cancelAfter(t, 200*time.Millisecond)
			r, err := p.Probe(ctx)
			require.ErrorIs(t, err, context.Canceled)
			require.ErrorIs(t, err, cache.ErrCanceled)
			assert.Less(t, time.Since(at()), cancelBound)
			assert.Equal(t, cache.ErrCanceled, errKind(r))
		})
	}
}

// Issue 30: a Run whose ctx reaches its deadline while its probes wait on a
// peer that never answers returned err == nil and no probes in 15 of 20
// tries. The probes' socket deadline (ctx's) fires in the netpoller an
// instant before ctx's own timer, so the probe is cut short by the deadline
// while ctx.Err() is still nil. Every try must return the deadline's error
// with the (empty) summary; a cancel likewise.
func TestProbeRunDeadlineSilentPeer(t *testing.T) {
	addr := silentListener(t)
	p, err := cache.NewProber(&cache.Endpoint{Addr: addr, ConnectTimeout: time.Minute, RequestTimeout: time.Minute})
	require.NoError(t, err)
	for i := range 20 {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
		sum, err := p.Run(ctx, cache.ProbeConfigWith(3, 2, 0, nil, nil))
		cancel()
		require.ErrorIs(t, err, context.DeadlineExceeded, "try %d", i)
		require.NotNil(t, sum)
		assert.Zero(t, sum.Probes, "try %d: the probes cut short are not counted", i)
	}
	for i := range 20 {
		ctx, _ := cancelAfter(t, 30*time.Millisecond)
		sum, err := p.Run(ctx, cache.ProbeConfigWith(3, 2, 0, nil, nil))
		require.ErrorIs(t, err, context.Canceled, "try %d", i)
		require.NotNil(t, sum)
		assert.Zero(t, sum.Probes)
	}
}

// The same race in a workload run: its operations on a silent peer time
// out on ctx's deadline, and Run must say so, every time.
func TestRunDeadlineSilentPeer(t *testing.T) {
	ep := &cache.Endpoint{Addr: silentListener(t), ConnectTimeout: time.Minute, RequestTimeout: time.Minute}
	for i := range 20 {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
		r, err := cache.Run(ctx, ep, &cache.WorkloadConfig{Workers: 2, Duration: time.Minute})
		cancel()
		require.ErrorIs(t, err, context.DeadlineExceeded, "try %d", i)
		require.NotNil(t, r)
		assert.Zero(t, r.Errors, "try %d: operations cut short by the caller are not failures", i)
	}
}

func TestProbeTLSToPlainServer(t *testing.T) {
	s := cachetest.NewServer(t, nil)
	ep := endpointFor(s)
	ep.TLS, ep.InsecureSkipVerify = true, true
	ep.ConnectTimeout = 500 * time.Millisecond // the server waits for a line that never comes
	r, err := probeOnce(t, ep)
	require.ErrorIs(t, err, cache.ErrTLSHandshake)
	assert.Equal(t, cache.PhaseTLS, errPhase(r))
}

// stallingResolver is a resolver whose DNS server never answers: a lookup
// lasts until its context ends.
func stallingResolver() *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}}
}

// When ctx's deadline passes, Probe's error is ErrTimeout wrapping
// context.DeadlineExceeded in every phase, DNS and TLS included, whose
// deadlines are ctx's own (the connect timeout is a minute).
func TestProbeCtxDeadlineEveryPhase(t *testing.T) {
	addr := silentListener(t)
	_, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	for _, tc := range []struct {
		phase cache.Phase
		ep    *cache.Endpoint
	}{
		{cache.PhaseDNS, &cache.Endpoint{Addr: "cache.example.com:" + port, Resolver: stallingResolver()}},
		{cache.PhaseTLS, &cache.Endpoint{Addr: addr, TLS: true, InsecureSkipVerify: true}},
		{cache.PhaseAuth, &cache.Endpoint{Addr: addr, Password: "pw"}},
		{cache.PhaseCommand, &cache.Endpoint{Addr: addr}},
	} {
		t.Run(string(tc.phase), func(t *testing.T) {
			tc.ep.ConnectTimeout, tc.ep.RequestTimeout = time.Minute, time.Minute
			p, err := cache.NewProber(tc.ep)
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			r, err := p.Probe(ctx)
			require.ErrorIs(t, err, cache.ErrTimeout)
			require.ErrorIs(t, err, context.DeadlineExceeded)
			assert.Equal(t, tc.phase, errPhase(r))
			assert.Equal(t, cache.ErrTimeout, errKind(r))
		})
	}
}

// Endpoint.Credentials is asked in the AUTH phase of every connection: the
// user and password it returns authenticate, and its failure is an ErrAuth
// of that phase.
func TestProbeCredentials(t *testing.T) {
	s := cachetest.NewServer(t, &cachetest.Config{User: "bench", Password: "pw-1"})
	ep := endpointFor(s)
	var calls atomic.Int32
	ep.User, ep.Password = "", ""
	ep.Credentials = func(ctx context.Context) (string, cache.Secret, error) {
		calls.Add(1)
		if _, ok := ctx.Deadline(); !ok {
			return "", "", errors.New("no deadline")
		}
		return "bench", "pw-1", nil
	}
	p, err := cache.NewProber(ep)
	require.NoError(t, err)
	sum, err := p.Run(context.Background(), &cache.ProbeConfig{Probes: 3})
	require.NoError(t, err)
	assert.Equal(t, 3, sum.Succeeded, "%v", sum.ErrorExamples)
	assert.Equal(t, int32(3), calls.Load(), "once per connection")
	assert.Positive(t, sum.Phases[cache.PhaseAuth].Observations)

	ep.Credentials = func(context.Context) (string, cache.Secret, error) { return "", "", errors.New("token expired") }
	p, err = cache.NewProber(ep)
	require.NoError(t, err)
	_, err = p.Probe(context.Background())
	require.ErrorIs(t, err, cache.ErrAuth)
	var ce *cache.Error
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, cache.PhaseAuth, ce.Phase)
	assert.ErrorContains(t, err, "token expired")

	ep.Credentials = func(context.Context) (string, cache.Secret, error) { return "bench", "wrong", nil }
	p, err = cache.NewProber(ep)
	require.NoError(t, err)
	_, err = p.Probe(context.Background())
	require.ErrorIs(t, err, cache.ErrWrongPass)
}

// errPhase is the phase of r's classified error, "" when none.
func errPhase(r *cache.ProbeResult) cache.Phase {
	var e *cache.Error
	if errors.As(r.Err, &e) {
		return e.Phase
	}
	return ""
}

// errKind is the kind of r's classified error, "" when none.
func errKind(r *cache.ProbeResult) cache.ErrorKind {
	var e *cache.Error
	if errors.As(r.Err, &e) {
		return e.Kind
	}
	return ""
}
