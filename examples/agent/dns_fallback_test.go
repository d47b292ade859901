package main

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// srvFails is fakeDNS whose SRV queries fail with srvErr (nil: fakeDNS's
// answer).
type srvFails struct {
	*fakeDNS
	mu     sync.Mutex
	srvErr error
}

func (s *srvFails) LookupSRV(ctx context.Context, service, proto, name string) (string, []*net.SRV, error) {
	s.mu.Lock()
	err := s.srvErr
	s.mu.Unlock()
	if err != nil {
		return "", nil, err
	}
	return s.fakeDNS.LookupSRV(ctx, service, proto, name)
}

var (
	errRefused  = &net.DNSError{Err: "server misbehaving", Name: "fleet"}
	errServFail = &net.DNSError{Err: "server misbehaving", Name: "fleet", IsTemporary: true}
	errTimeout  = &net.DNSError{Err: "i/o timeout", Name: "fleet", IsTimeout: true, IsTemporary: true}
)

// TestDNSPeersSRVRefusedFallsBack: a resolver that refuses SRV (or does
// not implement it) still gives the name's A records; a failed SRV query
// of a name whose last answer was SRV records keeps the last set when it
// may pass, and falls back when the resolver refuses.
func TestDNSPeersSRVRefusedFallsBack(t *testing.T) {
	f := &srvFails{fakeDNS: &fakeDNS{a: map[string][]string{
		"fleet": {"198.18.0.1", "198.18.0.2"}, "n1": {"198.18.1.1"},
	}, srv: map[string][]*net.SRV{}}}
	d, err := newDNSPeers("fleet", 5201, 11111, f)
	require.NoError(t, err)
	d.own = ownIs()

	for _, e := range []error{errRefused, errServFail, errTimeout} {
		f.srvErr = e
		ps, err := d.lookup(t.Context())
		require.NoError(t, err, "%v: falls back to A/AAAA", e)
		assert.Equal(t, []string{"198.18.0.1", "198.18.0.2"}, hosts(ps))
		assert.Equal(t, e, d.srvErr)
	}

	// The name gets SRV records: they win, and srvErr clears.
	f.srvErr = nil
	f.srv["fleet"] = []*net.SRV{{Target: "n1", Port: 7001}}
	ps, err := d.lookup(t.Context())
	require.NoError(t, err)
	assert.Equal(t, []peer{{"198.18.1.1", 5201, 7001}}, ps)
	assert.NoError(t, d.srvErr)

	// A failure that may pass keeps the SRV answer's set (its ports).
	for _, e := range []error{errServFail, errTimeout} {
		f.srvErr = e
		_, err = d.lookup(t.Context())
		require.ErrorIs(t, err, e)
	}
	// A refusal is not passing: A/AAAA.
	f.srvErr = errRefused
	ps, err = d.lookup(t.Context())
	require.NoError(t, err)
	assert.Equal(t, []string{"198.18.0.1", "198.18.0.2"}, hosts(ps))

	// A failed A/AAAA lookup is the error that keeps the last set.
	f.fakeDNS.fail = true
	_, err = d.lookup(t.Context())
	require.Error(t, err)
}

// TestResolveLoopLogsSRVFallbackOnce: a resolver that refuses every SRV
// query is logged once, not every period, and the peers come from A.
func TestResolveLoopLogsSRVFallbackOnce(t *testing.T) {
	m := newMetrics()
	cfg := testMeshConfig(m)
	cfg.probes.rtt = func(context.Context, peer) (rttResult, error) { return rttResult{}, nil }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ms := newMesh(ctx, cfg)
	src := &peerSources{ms: ms}
	f := &srvFails{fakeDNS: &fakeDNS{a: map[string][]string{"fleet": {"198.18.0.1", "198.18.0.2"}}}, srvErr: errRefused}
	d, err := newDNSPeers("fleet", 1, 2, f)
	require.NoError(t, err)
	d.own = ownIs()
	var buf syncBuffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	done := make(chan struct{})
	go func() {
		defer close(done)
		resolveLoop(ctx, d, src, 5*time.Millisecond, time.Second, m, log)
	}()
	require.Eventually(t, func() bool { return testutil.ToFloat64(m.dnsPeers) == 2 }, 5*time.Second, 5*time.Millisecond)
	require.Eventually(t, func() bool { return lookups(m, "ok") >= 10 }, 5*time.Second, 5*time.Millisecond)
	cancel()
	<-done
	waitOrFail(t, ms.wait, stopBound)
	assert.Equal(t, 1, strings.Count(buf.String(), "SRV query failed"), buf.String())
	assert.Zero(t, lookups(m, "error"))
}

func lookups(m *metrics, result string) float64 {
	return testutil.ToFloat64(m.dnsLookups.WithLabelValues(result))
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
