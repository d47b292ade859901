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

func parseFixture(t *testing.T, name string) *ethtool.Snapshot {
	f, err := os.Open(fixture(name))
	require.NoError(t, err)
	defer f.Close()
	s, err := ethtool.ParseSnapshot(f)
	require.NoError(t, err)
	return s
}

// TestWindowSameVerdictAsSRD: enastat -before/-after names the same
// allowances, with the same deltas, as srd.NewWindow (and so srdcheck) on
// the same two snapshots.
func TestWindowSameVerdictAsSRD(t *testing.T) {
	for _, c := range []struct {
		before, after string
		want          []string
	}{
		{"ena-2.17-cross-az-before.txt", "ena-2.17-cross-az-after.txt", []string{"pps_allowance_exceeded"}},
		{"ena-2.17-same-az-before.txt", "ena-2.17-same-az-after.txt", []string{}},
		{"veth.txt", "veth.txt", []string{}},
	} {
		code, out, stderr := runArgs(t, "-before", fixture(c.before), "-after", fixture(c.after), "-json")
		require.Equal(t, 0, code, stderr)
		var got map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &got))
		w := srd.NewWindow(parseFixture(t, c.before), parseFixture(t, c.after))
		assert.Equal(t, c.want, w.LimitedBy, c.before)
		wb, err := json.Marshal(w)
		require.NoError(t, err)
		var want map[string]any
		require.NoError(t, json.Unmarshal(wb, &want))
		assert.Equal(t, want["limited_by"], got["limited_by"], c.before)
		for _, k := range append(ethtool.AllowanceCounters(), "conntrack_allowance_available", "conntrack_allowance_available_before") {
			assert.Equal(t, want[k], got[k], "%s %s", c.before, k)
		}
		assert.Equal(t, w.Allowance != nil, got["allowance_note"] == nil, c.before)

		code, text, _ := runArgs(t, "-before", fixture(c.before), "-after", fixture(c.after))
		require.Equal(t, 0, code)
		switch len(c.want) {
		case 0:
			assert.Contains(t, text, "  limited by: -")
		default:
			assert.Contains(t, text, "  limited by: pps_allowance_exceeded\n")
		}
	}
	code, _, stderr := runArgs(t, "-before", fixture("veth.txt"))
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "-before and -after go together")
}

// resetWindow writes two `ethtool -S` texts of a window in which the driver
// reset (total_resets 0 -> 1) and pps_allowance_exceeded restarted from 5000
// and counted 300 packets since.
func resetWindow(t *testing.T) (before, after string) {
	dir := t.TempDir()
	write := func(name string, resets, pps int) string {
		p := filepath.Join(dir, name)
		text := fmt.Sprintf("NIC statistics:\n     total_resets: %d\n     bw_in_allowance_exceeded: 0\n     bw_out_allowance_exceeded: 0\n"+
			"     pps_allowance_exceeded: %d\n     conntrack_allowance_exceeded: 0\n     linklocal_allowance_exceeded: 0\n", resets, pps)
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
		return p
	}
	return write("before.txt", 0, 5000), write("after.txt", 1, 300)
}

// TestWindowAllowanceReset: restarted allowance counters read as lower
// bounds, and the one that counted since the restart is the limit.
func TestWindowAllowanceReset(t *testing.T) {
	before, after := resetWindow(t)
	code, text, stderr := runArgs(t, "-before", before, "-after", after)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, text, "  limited by: pps_allowance_exceeded\n")
	assert.Contains(t, text, "deltas are lower bounds: bw_in_allowance_exceeded at least +0, bw_out_allowance_exceeded at least +0, pps_allowance_exceeded at least +300,")

	code, out, _ := runArgs(t, "-before", before, "-after", after, "-json")
	require.Equal(t, 0, code)
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	assert.Equal(t, 300.0, got["pps_allowance_exceeded"])
	assert.Equal(t, []any{"pps_allowance_exceeded"}, got["limited_by"])
	assert.Len(t, got["allowance_counters_reset"], 5)
}
