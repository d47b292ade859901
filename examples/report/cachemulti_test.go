package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/netperfkit/netperfkit/cache/cachetest"
	"github.com/netperfkit/netperfkit/examples/internal/cachecli"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReportCacheMultiEndpoint runs E3 on five labelled configurations in
// one run: a plain server (N1, given on the command line), a TLS+ACL
// server (N2) and a cluster (N3) set up by a YAML -cache-config, a dead
// endpoint (X1) and a TLS endpoint with a server name (N4), which glide
// cannot set. The dead one and glide's refusal become error rows; every
// other endpoint runs its workloads.
func TestReportCacheMultiEndpoint(t *testing.T) {
	plain := cachetest.NewServer(t, nil)
	secure := cachetest.NewServer(t, &cachetest.Config{TLS: true, User: "bench", Password: "multi-pw"})
	cluster := cachetest.NewServer(t, &cachetest.Config{Cluster: true})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	dead := ln.Addr().String()
	require.NoError(t, ln.Close())

	t.Setenv("MULTI_PW", "multi-pw")
	cfg := fmt.Sprintf(`endpoints:
  - label: N2
    addr: %s
    tls: true
    cacert: %s
    user: bench
    password_env: MULTI_PW
  - label: N3
    addr: %s
    cluster: true
  - label: N4
    addr: %s
    cacert: %s
    server_name: 127.0.0.1
    user: bench
    password_env: MULTI_PW
`, secure.Addr, secure.CAFile, cluster.Addr, secure.Addr, secure.CAFile)
	cfgFile := filepath.Join(t.TempDir(), "endpoints.yaml")
	require.NoError(t, os.WriteFile(cfgFile, []byte(cfg), 0o600))

	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"-skip", "paths,matrix", "-imds", "off",
		"-cache", "N1=" + plain.Addr + ",N2,N3,X1=" + dead + ",N4", "-cache-config", cfgFile, "-cache-compare", "N1/N3,N2/N4",
		"-cache-d", "200ms", "-runs", "1", "-probes", "5", "-workers", "2", "-out", out}, &stdout, &stderr)
	require.Equal(t, 0, code, "a failing endpoint fails nothing else; stderr: %s", stderr.String())

	b, err := os.ReadFile(filepath.Join(out, "report.json"))
	require.NoError(t, err)
	var rep struct {
		Cache CacheSection `json:"cache"`
	}
	require.NoError(t, json.Unmarshal(b, &rep))
	eps := rep.Cache.Endpoints
	require.Len(t, eps, 5)
	labels := make([]string, len(eps))
	for i, ce := range eps {
		labels[i] = ce.Label
	}
	assert.Equal(t, []string{"N1", "N2", "N3", "X1", "N4"}, labels)

	n1, n2, n3, x1, n4 := eps[0], eps[1], eps[2], eps[3], eps[4]
	for _, ce := range []*CacheEndpoint{n1, n2, n3, n4} {
		require.NotNil(t, ce.Medians, ce.Label)
		assert.Empty(t, ce.ProbeError, ce.Label)
	}
	assert.Zero(t, n1.Medians.TLSUs)
	assert.Positive(t, n2.Medians.TLSUs, "TLS from the config file")
	assert.Positive(t, n2.Medians.AuthUs, "ACL user and password_env from the config file")
	assert.Positive(t, n3.Medians.ClusterSlotsUs, "cluster from the config file")
	assert.Contains(t, n3.Endpoint, "cluster=true")
	assert.Nil(t, x1.Medians)
	assert.Contains(t, x1.ProbeError, "connect_refused")

	glideBuilt, missed := false, false
	for _, ce := range eps {
		require.NotEmpty(t, ce.Workloads, "workloads run on every endpoint: %s", ce.Label)
		for _, w := range ce.Workloads {
			switch {
			case ce.Label == "X1":
				assert.Contains(t, w.Error, "connect_refused", w.Engine)
			case ce.Label == "N4" && w.Engine == cachecli.Glide:
				glideBuilt = true
				assert.Contains(t, w.Error, "glide: cannot set the TLS server name")
			case missedWindow(t, ce.Label, w):
				missed = true
			default:
				assert.Empty(t, w.Error, "%s %s", ce.Label, w.Engine)
				require.NotNil(t, w.Pool, "%s %s", ce.Label, w.Engine)
				require.NotNil(t, w.Connect, "%s %s", ce.Label, w.Engine)
				assert.Positive(t, w.Pool.Succeeded, "%s %s: operations completed, however slowly", ce.Label, w.Engine)
				assert.Positive(t, w.Connect.Attempts, "%s %s", ce.Label, w.Engine)
			}
		}
	}
	var pairs []string
	for _, c := range rep.Cache.Comparisons {
		if c.Kind == "endpoint" {
			pairs = append(pairs, c.Base+" / "+c.Other)
		}
	}
	first := eps[0].Workloads[0].Engine
	want := []string{"N1 " + first + " pool / N3 " + first + " pool", "N1 " + first + " connect / N3 " + first + " connect"}
	if !glideBuilt {
		want = append(want, "N2 resp pool / N4 resp pool", "N2 resp connect / N4 resp connect")
	}
	if !missed { // which pairs exist depends on the modes that ran
		assert.Equal(t, want, pairs, "-cache-compare picks the pairs; a pair with a side that did not run is left out")
	}

	// The under-load row (issue 14): RPM and both probe distributions on
	// every reachable endpoint, an error row for the dead one.
	for _, ce := range []*CacheEndpoint{n1, n2, n3} {
		require.NotNil(t, ce.UnderLoad, "%s: %s", ce.Label, ce.UnderLoadError)
		assert.Positive(t, ce.UnderLoad.RPM, ce.Label)
		assert.Positive(t, ce.UnderLoad.NewConnection.Probes, ce.Label)
		assert.Positive(t, ce.UnderLoad.Loaded.Probes, ce.Label)
	}
	assert.Nil(t, x1.UnderLoad)
	assert.NotEmpty(t, x1.UnderLoadError)

	text := stdout.String()
	assert.Contains(t, text, "E3 cache: under load")
	assert.Regexp(t, `X1\s+5\s+5(\s+-){7}\s+none\n`, text, "no phase, and no cause: nothing waited")
	assert.Regexp(t, `X1: probe error: (cache: )?all 5 probes failed: .*connect_refused`, text)
	assert.Contains(t, text, "X1 resp: error: pool: ")
	if glideBuilt {
		assert.Contains(t, text, "N4 glide: error: pool: cache: engine glide: glide: cannot set the TLS server name")
	}
}
