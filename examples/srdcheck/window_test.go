package main

import (
	"encoding/json"
	"os"
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
