package main

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/cache/median"
	"github.com/netperfkit/netperfkit/examples/internal/cachecli"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEmbeddedCacheRunsE3 runs E3's probe and workloads against the two
// in-process miniredis servers: the plain one shows no TLS phase, the
// TLS+ACL one shows TLS and AUTH, and both serve both modes.
func TestEmbeddedCacheRunsE3(t *testing.T) {
	targets, cleanup, err := embeddedCacheTargets()
	require.NoError(t, err)
	defer cleanup()
	require.Len(t, targets, 2)

	engines, err := cachecli.Engines([]string{"resp"}, nil)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sec, err := runCache(ctx, targets, cacheOptions{Probes: 5, Duration: 200 * time.Millisecond, Runs: 2, Workers: 2, Engines: engines}, newProgress(nil, 0))
	require.NoError(t, err)
	require.Len(t, sec.Endpoints, 2)
	plain, secure := sec.Endpoints[0], sec.Endpoints[1]
	assert.Equal(t, embeddedLabel, plain.Label)
	assert.Equal(t, embeddedTLSLabel, secure.Label)
	for _, ce := range sec.Endpoints {
		require.Empty(t, ce.ProbeError, ce.Label)
		require.NotNil(t, ce.Medians, ce.Label)
		assert.Equal(t, 5, ce.Probe.Succeeded, ce.Label)
		assert.NotNil(t, ce.UnderLoad, "under-load row of %s: %s", ce.Label, ce.UnderLoadError)
		require.Len(t, ce.Workloads, 1, ce.Label)
		w := ce.Workloads[0]
		if missedWindow(t, ce.Label, w) {
			continue
		}
		assert.Empty(t, w.Error, ce.Label)
		for _, a := range []*median.Result{w.Pool, w.Connect} {
			require.NotNil(t, a, ce.Label)
			assert.Equal(t, 2, a.OpsPerSec.N, ce.Label)
			for _, r := range a.Results {
				// Each run completed operations, however slowly (a loaded
				// machine may finish none inside 200 ms: ops/s 0).
				assert.Positive(t, r.Succeeded, "%s %s", ce.Label, a.Mode)
			}
		}
	}
	assert.Zero(t, plain.Medians.TLSUs, "the plain server has no TLS phase")
	assert.Zero(t, plain.Medians.AuthUs, "the plain server has no AUTH phase")
	assert.Positive(t, secure.Medians.TLSUs, "the TLS server's handshake is timed")
	assert.Positive(t, secure.Medians.AuthUs, "the ACL user authenticates")
}

// TestEmbeddedRejectsWrongPassword checks that the TLS+ACL miniredis really
// requires its user: a wrong password fails every probe.
func TestEmbeddedRejectsWrongPassword(t *testing.T) {
	targets, cleanup, err := embeddedCacheTargets()
	require.NoError(t, err)
	defer cleanup()
	ep := *targets[1].Endpoint
	ep.Password = "wrong"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := cache.NewProber(&ep)
	require.NoError(t, err)
	s, _ := p.Run(ctx, &cache.ProbeConfig{Probes: 2})
	require.NotNil(t, s)
	assert.Zero(t, s.Succeeded)
}

// TestDefaultCacheTargetsOrder checks the choice without -cache: real
// servers when one starts, else the labelled miniredis, saying why.
func TestDefaultCacheTargetsOrder(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	set, err := defaultCacheTargets(ctx, nil)
	require.NoError(t, err)
	assert.Equal(t, embeddedNote, set.note)
	assert.Equal(t, embeddedLabels(), []string{set.targets[0].Label, set.targets[1].Label})
	set.cleanup()

	set, err = defaultCacheTargets(ctx, []string{filepath.Join(t.TempDir(), "redis-server")})
	require.NoError(t, err)
	assert.Contains(t, set.note, embeddedNote)
	assert.Contains(t, set.note, "did not start", "the note says why the installed server was passed over")
	assert.Equal(t, embeddedLabel, set.targets[0].Label)
	set.cleanup()

	bins := localServerBinaries()
	if len(bins) == 0 {
		t.Log("no valkey-server or redis-server installed: the preference for real servers is not exercised")
		return
	}
	set, err = defaultCacheTargets(ctx, bins[len(bins)-1:])
	require.NoError(t, err)
	defer set.cleanup()
	assert.Empty(t, set.note, "a real server carries no miniredis note")
	for _, tg := range set.targets {
		assert.NotContains(t, tg.Label, "miniredis")
	}
}

func TestCacheTextCarriesEmbeddedNote(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, writeCacheText(&b, &CacheSection{ServerNote: embeddedNote, Endpoints: []*CacheEndpoint{{Label: embeddedLabel}}}))
	assert.Contains(t, b.String(), "NOTE: in-process miniredis: shows the method, not a cache's performance")
}

// namedEngine stands for an engine by name only; it is never opened.
type namedEngine string

func (e namedEngine) Name() string { return string(e) }
func (namedEngine) Open(context.Context, *cache.Endpoint) (func(context.Context) (cache.Client, error), error) {
	return nil, errors.New("report: test engine")
}

// TestEmbeddedEngines checks that glide, which cannot connect to
// miniredis, is left out against it with a word why, and kept against
// real servers.
func TestEmbeddedEngines(t *testing.T) {
	glide := namedEngine(cachecli.Glide)
	real := &cacheTargetSet{}
	assert.Equal(t, []cache.Engine{glide, nil}, real.engines([]cache.Engine{glide, nil}))
	assert.Empty(t, real.note)

	emb := &cacheTargetSet{embedded: true, note: embeddedNote}
	assert.Equal(t, []cache.Engine{nil}, emb.engines([]cache.Engine{glide, nil}))
	assert.Contains(t, emb.note, "glide engine does not run against it")
	assert.True(t, strings.HasPrefix(emb.note, embeddedNote))

	only := &cacheTargetSet{embedded: true, note: embeddedNote}
	assert.Equal(t, []cache.Engine{nil}, only.engines([]cache.Engine{glide}), "resp runs in glide's place")
	resp := &cacheTargetSet{embedded: true, note: embeddedNote}
	assert.Equal(t, []cache.Engine{nil}, resp.engines([]cache.Engine{nil}))
	assert.Equal(t, embeddedNote, resp.note, "nothing left out, nothing to say")
}
