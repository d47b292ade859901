package main

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/cache/cachetest"
)

func TestCacheprobe(t *testing.T) {
	s := cachetest.NewServer(t, &cachetest.Config{TLS: true, User: "bench", Password: "s3cret-pw"})
	base := []string{"-addr", s.Addr, "-tls", "-cacert", s.CAFile, "-user", "bench", "-n", "5"}

	var out, errb bytes.Buffer
	rc := run(append(base, "-password", "s3cret-pw", "-json"), &out, &errb)
	require.Equal(t, 0, rc, errb.String())
	var m map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &m))
	for _, k := range []string{"probes", "errors", "dns_us", "tcp_us", "tls_us", "auth_us", "cluster_slots_us", "get_us", "total_us"} {
		require.Contains(t, m, k)
	}
	assert.Equal(t, 5.0, m["probes"])
	assert.Equal(t, 0.0, m["errors"])
	assert.Positive(t, m["tls_us"])
	assert.Positive(t, m["auth_us"])
	assert.Equal(t, 0.0, m["cluster_slots_us"])
	assert.NotContains(t, out.String()+errb.String(), "s3cret-pw")

	for name, tc := range map[string]struct {
		args []string
		env  string
		want string
	}{
		"wrong password":  {append(base, "-password", "nope-nope"), "", "auth_wrongpass"},
		"password by env": {base, "s3cret-pw", ""},
		"missing CA":      {[]string{"-addr", s.Addr, "-tls", "-user", "bench", "-password", "s3cret-pw", "-n", "2"}, "", "tls_verify"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv("NETPERFKIT_CACHE_PASSWORD", tc.env)
			var out, errb bytes.Buffer
			rc := run(tc.args, &out, &errb)
			if tc.want == "" {
				require.Equal(t, 0, rc, errb.String())
				return
			}
			assert.Equal(t, 1, rc)
			assert.Contains(t, errb.String(), tc.want)
			assert.NotContains(t, errb.String(), "timeout")
			assert.NotContains(t, out.String()+errb.String(), "s3cret-pw")
			assert.NotContains(t, out.String()+errb.String(), "nope-nope")
		})
	}

	stopped := cachetest.NewServer(t, nil)
	stopped.Kill()
	out.Reset()
	errb.Reset()
	require.Equal(t, 1, run([]string{"-addr", stopped.Addr, "-n", "2"}, &out, &errb))
	assert.Contains(t, errb.String(), "connect_refused")
}

func TestCacheprobeLocalCluster(t *testing.T) {
	cachetest.NewServer(t, nil) // skips without a server binary
	var out, errb bytes.Buffer
	rc := run([]string{"-cluster", "-n", "3", "-json"}, &out, &errb)
	require.Equal(t, 0, rc, errb.String())
	var m map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &m))
	assert.Positive(t, m["cluster_slots_us"])
}
