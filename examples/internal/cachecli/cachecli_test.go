package cachecli

import (
	"bytes"
	"context"
	"flag"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/cache"
)

type fakeEngine struct{}

func (fakeEngine) Name() string { return Glide }
func (fakeEngine) Open(context.Context, *cache.Endpoint) (func(context.Context) (cache.Client, error), error) {
	return nil, nil
}

func TestSelectEngines(t *testing.T) {
	var warn bytes.Buffer
	got, err := selectEngines([]string{Glide, Resp}, fakeEngine{}, &warn)
	require.NoError(t, err)
	assert.Equal(t, []cache.Engine{fakeEngine{}, nil}, got)
	assert.Empty(t, warn.String())
	assert.Equal(t, []string{Glide, Resp}, []string{Name(got[0]), Name(got[1])})

	// Without glide built in: a clear warning, and resp once in its place.
	got, err = selectEngines([]string{Glide, Resp}, nil, &warn)
	require.NoError(t, err)
	assert.Equal(t, []cache.Engine{nil}, got)
	assert.Contains(t, warn.String(), "glide engine not built in (needs cgo)")

	_, err = selectEngines([]string{"redis"}, nil, &warn)
	require.ErrorContains(t, err, `unknown engine "redis"`)

	// Engines wires the engine this build has.
	got, err = Engines([]string{Glide}, &warn)
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, glideEngine() != nil, got[0] != nil)
}

func TestEndpointFlagsPrefix(t *testing.T) {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	ef := NewEndpointFlags(fs, "cache")
	require.NoError(t, fs.Parse([]string{"-cache", "c.example:6379", "-cache-cluster", "-cache-user", "app",
		"-cache-iam-cache", "My-Cache", "-cache-iam-region", "eu-west-1", "-cache-serverless"}))
	ep, err := ef.Endpoint()
	require.NoError(t, err)
	assert.Equal(t, "c.example:6379 cluster=true tls=true auth=credentials:app", ep.String())
	assert.NotNil(t, ep.Credentials, "IAM tokens come from cache/iam's token source")
	assert.Empty(t, ep.Password)
}

func TestEndpointFlagsPassword(t *testing.T) {
	t.Setenv(PasswordEnv, "from-env")
	fs := flag.NewFlagSet("tool", flag.ContinueOnError)
	ef := NewEndpointFlags(fs, "")
	require.NoError(t, fs.Parse([]string{"-addr", "h:1", "-user", "u"}))
	assert.Equal(t, "from-env", ef.Password().Reveal())
	require.NoError(t, fs.Parse([]string{"-password", "flag-pw"}))
	assert.Equal(t, "flag-pw", ef.Password().Reveal())

	fs = flag.NewFlagSet("tool", flag.ContinueOnError)
	ef = NewEndpointFlags(fs, "")
	require.NoError(t, fs.Parse([]string{"-serverless"}))
	_, err := ef.Endpoint()
	require.Error(t, err)
}

func TestParseRatio(t *testing.T) {
	g, s, err := ParseRatio("1:1")
	require.NoError(t, err)
	assert.Equal(t, [2]int{1, 1}, [2]int{g, s})
	g, s, err = ParseRatio("9:0")
	require.NoError(t, err)
	assert.Equal(t, [2]int{9, 0}, [2]int{g, s})
	for _, bad := range []string{"", "1", "a:b", "-1:2", "0:0", "1:1:1"} {
		_, _, err := ParseRatio(bad)
		assert.Error(t, err, bad)
	}
}

func TestCausesText(t *testing.T) {
	assert.Equal(t, "none", CausesText(cache.Causes{}))
	c := cache.Causes{Connects: map[string]int64{"syn_retransmit": 14, "dns_retry": 1},
		Added: map[string]time.Duration{"syn_retransmit": 14300 * time.Millisecond, "dns_retry": 250 * time.Millisecond},
		Tail:  "p99 1.02 s: 14 of 487 connects (2.9 %) waited for a SYN retransmission (1.02 s)"}
	assert.Equal(t, "dns_retry 1 (250 ms), syn_retransmit 14 (14.3 s); p99 1.02 s: 14 of 487 connects (2.9 %) waited for a SYN retransmission (1.02 s)", CausesText(c))
}

// -procs N wins; -1 or GOMAXPROCS in the environment leave Go's; else
// cache.Procs's rule.
func TestProcs(t *testing.T) {
	t.Setenv("GOMAXPROCS", "")
	connect := &cache.WorkloadConfig{Mode: cache.ConnectPerOp, Workers: 4}
	assert.Equal(t, 3, Procs(3, connect))
	assert.Equal(t, 0, Procs(-1, connect))
	assert.Equal(t, cache.Procs(connect), Procs(0, connect))
	assert.Equal(t, 1, Procs(0, connect))

	t.Setenv("GOMAXPROCS", "2")
	assert.Equal(t, 0, Procs(0, connect), "the environment's choice stands")
}
