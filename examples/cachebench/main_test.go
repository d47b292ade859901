package main

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/cache/cachetest"
)

func TestCachebenchJSON(t *testing.T) {
	s := cachetest.NewServer(t, &cachetest.Config{TLS: true, User: "bench", Password: "s3cret-pw"})
	t.Setenv("NETPERFKIT_CACHE_PASSWORD", "s3cret-pw")
	var out, errb bytes.Buffer
	rc := run([]string{"-addr", s.Addr, "-tls", "-cacert", s.CAFile, "-user", "bench",
		"-engine", "both", "-mode", "both", "-workers", "2", "-d", "200ms", "-runs", "2", "-ratio", "3:1", "-json"}, &out, &errb)
	require.Equal(t, 0, rc, errb.String())
	var o struct {
		Results     []map[string]any `json:"results"`
		Comparisons []map[string]any `json:"comparisons"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &o))
	require.Len(t, o.Results, 4)
	seen := map[string]bool{}
	for _, r := range o.Results {
		for _, k := range []string{"engine", "mode", "p50_us", "p99_us", "ops_per_sec", "p50_us_range", "p99_us_range", "ops_per_sec_range", "attempts", "errors"} {
			require.Contains(t, r, k)
		}
		seen[r["engine"].(string)+"/"+r["mode"].(string)] = true
		assert.Positive(t, r["ops_per_sec"])
		assert.Equal(t, 0.0, r["errors"])
	}
	assert.Equal(t, map[string]bool{"glide/pool": true, "resp/pool": true, "glide/connect": true, "resp/connect": true}, seen)
	assert.Len(t, o.Comparisons, 4)
	assert.NotContains(t, out.String()+errb.String(), "s3cret-pw")
}

func TestCachebenchErrors(t *testing.T) {
	s := cachetest.NewServer(t, &cachetest.Config{User: "bench", Password: "s3cret-pw"})
	var out, errb bytes.Buffer
	rc := run([]string{"-addr", s.Addr, "-user", "bench", "-password", "bad-pw", "-engine", "resp", "-d", "100ms", "-runs", "1"}, &out, &errb)
	assert.Equal(t, 1, rc)
	assert.Contains(t, errb.String(), "auth_wrongpass")
	assert.NotContains(t, errb.String(), "bad-pw")

	errb.Reset()
	assert.Equal(t, 2, run([]string{"-engine", "redis"}, &out, &errb))
	assert.Equal(t, 2, run([]string{"-ratio", "x"}, &out, &errb))
}
