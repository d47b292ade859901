package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/netperfkit/netperfkit/ethtool"
	"github.com/netperfkit/netperfkit/srd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAllowanceVerdictMatchesSRD: srdcheck's JSON carries srd.NewWindow's
// allowance deltas and limited_by, and its text names the same limit.
func TestAllowanceVerdictMatchesSRD(t *testing.T) {
	read := func(name string) *ethtool.Snapshot {
		f, err := os.Open(fixture(name))
		require.NoError(t, err)
		defer f.Close()
		s, err := ethtool.ParseSnapshot(f)
		require.NoError(t, err)
		return s
	}
	for _, c := range []struct{ before, after, limitText string }{
		{"ena-2.17-cross-az-before.txt", "ena-2.17-cross-az-after.txt", "limited by     pps\n"},
		{"ena-2.17-same-az-before.txt", "ena-2.17-same-az-after.txt", "limited by     -\n"},
		{"veth.txt", "veth.txt", "allowances     -: no *_allowance_exceeded statistics"},
	} {
		_, out, stderr := runArgs(t, "-before", fixture(c.before), "-after", fixture(c.after), "-json")
		require.Empty(t, stderr)
		var got map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &got))
		wb, err := json.Marshal(srd.NewWindow(read(c.before), read(c.after)))
		require.NoError(t, err)
		var want map[string]any
		require.NoError(t, json.Unmarshal(wb, &want))
		for k, v := range want {
			assert.Equal(t, v, got[k], "%s: %s", c.before, k)
		}
		_, text, _ := runArgs(t, "-before", fixture(c.before), "-after", fixture(c.after))
		assert.Contains(t, text, c.limitText, c.before)
	}
}

// TestAllowanceResetReadsAtLeast: a driver reset in the window makes the
// allowance deltas lower bounds; the text says so and names the limit the
// restarted pps counter proves.
func TestAllowanceResetReadsAtLeast(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, resets, pps int) string {
		p := filepath.Join(dir, name)
		text := fmt.Sprintf("NIC statistics:\n     total_resets: %d\n     bw_in_allowance_exceeded: 0\n     bw_out_allowance_exceeded: 0\n"+
			"     pps_allowance_exceeded: %d\n     conntrack_allowance_exceeded: 0\n     linklocal_allowance_exceeded: 0\n", resets, pps)
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
		return p
	}
	before, after := write("before.txt", 0, 100), write("after.txt", 1, 150)
	_, text, stderr := runArgs(t, "-before", before, "-after", after)
	require.Empty(t, stderr)
	assert.Contains(t, text, "allowances     bw_in at least +0, bw_out at least +0, pps at least +50, conntrack at least +0, linklocal at least +0\n")
	assert.Contains(t, text, "restarted      bw_in_allowance_exceeded, bw_out_allowance_exceeded, pps_allowance_exceeded, conntrack_allowance_exceeded, linklocal_allowance_exceeded (or may have, after a driver reset): their deltas are lower bounds\n")
	assert.Contains(t, text, "limited by     pps\n")

	// Without a reset the text stays as it was.
	_, text, _ = runArgs(t, "-before", fixture("ena-2.17-cross-az-before.txt"), "-after", fixture("ena-2.17-cross-az-after.txt"))
	assert.Contains(t, text, "allowances     bw_in +0, bw_out +0, pps +1234, conntrack +0, linklocal +0\n")
	assert.NotContains(t, text, "restarted")
}
