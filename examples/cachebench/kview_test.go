package main

import (
	"bytes"
	"encoding/json"
	"regexp"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/cache/cachetest"
	"github.com/netperfkit/netperfkit/cache/median"
)

// The text shows the kernel view beside the application's where a run has
// one, and says why where it has none; JSON carries it in new keys.
func TestCachebenchKernelView(t *testing.T) {
	s := cachetest.NewServer(t, nil)
	var out, errb bytes.Buffer
	rc := run([]string{"-addr", s.Addr, "-engine", "resp", "-mode", "both", "-rate", "300", "-workers", "1", "-d", "300ms", "-runs", "1"}, &out, &errb)
	require.Equal(t, 0, rc, errb.String())
	txt := out.String()
	assert.Contains(t, txt, "resp connect: no kernel stamps: connect-per-op run")
	if runtime.GOOS == "linux" {
		assert.Contains(t, txt, "kernel-to-kernel view (request's transmit stamp to reply's receive stamp")
		// 90 requests, all of them stamped (fewer than the sample's floor)
		assert.Regexp(t, `resp\s+pool\s+\d+\s+\(\d+-\d+\)\s+\d+\s+\(\d+-\d+\)\s+1\s+(\d+) of (\d+)\n`, txt)
		m := regexp.MustCompile(`(\d+) of (\d+)\n`).FindStringSubmatch(txt)
		require.Len(t, m, 3)
		assert.Equal(t, m[2], m[1], "a run under the floor stamps every request")
	}

	out.Reset()
	rc = run([]string{"-addr", s.Addr, "-engine", "resp", "-mode", "both", "-rate", "300", "-workers", "1", "-d", "300ms", "-runs", "1", "-json"}, &out, &errb)
	require.Equal(t, 0, rc, errb.String())
	var o struct {
		Results []*struct {
			*median.Result
			KernelStamped int64 `json:"kernel_stamped"`
		}
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &o), out.String())
	require.Len(t, o.Results, 2)
	for _, r := range o.Results {
		if r.Mode == "connect" || runtime.GOOS != "linux" {
			assert.Nil(t, r.KernelP50)
			assert.NotEmpty(t, r.NoKernelStamps)
			assert.Zero(t, r.KernelStamped)
			continue
		}
		require.NotNil(t, r.KernelP50, r.NoKernelStamps)
		assert.Equal(t, r.Succeeded, r.KernelStamped)
		assert.Positive(t, r.KernelP50.Median)
		assert.LessOrEqual(t, r.KernelP50.Median, r.KernelP99.Median)
	}

	// Closed loop: no view, and the text says why.
	out.Reset()
	rc = run([]string{"-addr", s.Addr, "-engine", "resp", "-mode", "pool", "-workers", "1", "-d", "200ms", "-runs", "1"}, &out, &errb)
	require.Equal(t, 0, rc, errb.String())
	assert.Contains(t, out.String(), "resp pool: no kernel stamps: closed-loop run")

	// -kernel=false: an open-loop pooled run without the view, saying so.
	out.Reset()
	rc = run([]string{"-addr", s.Addr, "-engine", "resp", "-mode", "pool", "-rate", "300", "-workers", "1", "-d", "200ms", "-runs", "1", "-kernel=false"}, &out, &errb)
	require.Equal(t, 0, rc, errb.String())
	assert.Contains(t, out.String(), "resp pool: no kernel stamps: not asked for")
	assert.NotContains(t, out.String(), "kernel-to-kernel view")
}
