package srd_test

import (
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/ethtool"
	"github.com/netperfkit/netperfkit/internal/enaapicheck"
	"github.com/netperfkit/netperfkit/srd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAPINilAndZeroInputs calls every exported function with nil, zero and
// negative arguments: none panics or hangs, and each returns an error that
// names the argument or its documented zero result.
func TestAPINilAndZeroInputs(t *testing.T) {
	for _, c := range []struct {
		name string
		call func(t *testing.T)
	}{
		{"Coverage(nil, nil)", func(t *testing.T) {
			r := srd.Coverage(nil, nil)
			assert.Equal(t, srd.VerdictNoStatistics, r.Verdict)
			assert.Contains(t, r.Reason, "both snapshots are nil")
		}},
		{"Coverage(nil, after)", func(t *testing.T) {
			r := srd.Coverage(nil, &ethtool.Snapshot{Interface: "eth0"})
			assert.Equal(t, srd.VerdictNoStatistics, r.Verdict)
			assert.Contains(t, r.Reason, "the first snapshot, before, is nil")
			assert.Equal(t, "eth0", r.Interface)
		}},
		{"Coverage(before, nil)", func(t *testing.T) {
			assert.Contains(t, srd.Coverage(&ethtool.Snapshot{}, nil).Reason, "the second snapshot, after, is nil")
		}},
		{"Coverage(eth0, eth1)", func(t *testing.T) {
			srdStats := ethtool.Stats{{Name: "ena_srd_tx_pkts", Value: 5}, {Name: "ena_srd_eligible_tx_pkts", Value: 5}}
			r := srd.Coverage(&ethtool.Snapshot{Interface: "eth0", Stats: srdStats}, &ethtool.Snapshot{Interface: "eth1", Stats: srdStats})
			assert.Equal(t, srd.VerdictInconsistent, r.Verdict)
			assert.Contains(t, r.Reason, `before of "eth0" and after of "eth1"`)
			assert.Zero(t, r.TxPktsDelta)
		}},
		{"NewWindow(eth0, eth1)", func(t *testing.T) {
			st := ethtool.Stats{{Name: "pps_allowance_exceeded", Value: 1}}
			w := srd.NewWindow(&ethtool.Snapshot{Interface: "eth0", Stats: st}, &ethtool.Snapshot{Interface: "eth1", Stats: st})
			assert.Equal(t, srd.VerdictInconsistent, w.Verdict)
			assert.Nil(t, w.Allowance, "no allowance deltas across interfaces")
			assert.Equal(t, []string{}, w.LimitedBy)
		}},
		{"NewWindow(nil, nil)", func(t *testing.T) {
			w := srd.NewWindow(nil, nil)
			assert.Equal(t, srd.VerdictNoStatistics, w.Verdict)
			assert.Nil(t, w.Allowance)
			assert.Equal(t, []string{}, w.LimitedBy)
		}},
		{"ParseNetworkInterfaces(nil)", func(t *testing.T) {
			_, err := srd.ParseNetworkInterfaces(nil)
			assert.ErrorContains(t, err, "srd: ParseNetworkInterfaces: nil io.Reader r")
		}},
		{"ParseInstanceTypes(nil)", func(t *testing.T) {
			_, err := srd.ParseInstanceTypes(nil)
			assert.ErrorContains(t, err, "srd: ParseInstanceTypes: nil io.Reader r")
		}},
		{"SpecCheck(nil, empty, zero)", func(t *testing.T) {
			c := srd.SpecCheck(nil, "", srd.CoverageReport{})
			assert.Equal(t, srd.StatusWarn, c.Status)
			assert.Contains(t, c.Detail, "no network interface")
		}},
		{"Readiness(empty, nil)", func(t *testing.T) {
			_, err := srd.Readiness("", nil)
			assert.ErrorIs(t, err, os.ErrNotExist)
			assert.ErrorContains(t, err, `invalid interface name ""`)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			enaapicheck.Call(t, c.name, func() { c.call(t) })
		})
	}
}

// TestAPINilAndZeroReceivers calls every exported method on nil and zero
// values by reflection.
func TestAPINilAndZeroReceivers(t *testing.T) {
	got := enaapicheck.Methods(t,
		(*srd.CoverageReport)(nil), &srd.CoverageReport{},
		(*srd.Window)(nil), &srd.Window{},
		new(srd.ExpressMode), new(srd.Verdict), new(srd.Status),
		&srd.NetworkInterface{}, &srd.Check{}, &srd.ReadinessConfig{},
	)
	assert.ErrorContains(t, got["(*srd.CoverageReport)(nil).UnmarshalJSON"][0].(error), "nil *CoverageReport")
	assert.ErrorContains(t, got["(*srd.Window)(nil).UnmarshalJSON"][0].(error), "nil *Window")
	assert.Equal(t, "-", got["*srd.Window.LimitedByText"][0])
	assert.Equal(t, "-", got["*srd.CoverageReport.Percent"][0])
	assert.Equal(t, false, got["*srd.CoverageReport.HasSRD"][0])
}

// TestCoverageAndWindowJSONShape pins the JSON of CoverageReport and Window
// to the shape they had when the window was a float field and the mode's
// reading and the allowance note were fields: same keys, order and values.
func TestCoverageAndWindowJSONShape(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	stats := func(tx, eligible, pps uint64) ethtool.Stats {
		return ethtool.Stats{{Name: "ena_srd_mode", Value: 3}, {Name: "ena_srd_tx_pkts", Value: tx},
			{Name: "ena_srd_eligible_tx_pkts", Value: eligible}, {Name: "ena_srd_rx_pkts", Value: tx},
			{Name: "ena_srd_resource_utilization", Value: 1},
			{Name: "bw_in_allowance_exceeded"}, {Name: "bw_out_allowance_exceeded"}, {Name: "pps_allowance_exceeded", Value: pps},
			{Name: "conntrack_allowance_exceeded"}, {Name: "linklocal_allowance_exceeded"}}
	}
	before := &ethtool.Snapshot{Time: t0, Interface: "eth0", Stats: stats(100, 100, 0)}
	after := &ethtool.Snapshot{Time: t0.Add(2500 * time.Millisecond), Interface: "eth0", Stats: stats(1100, 1100, 7)}

	const coverage = `"interface":"eth0","window_seconds":2.5,"srd_mode":3,"srd_mode_text":"ENA Express on, UDP on",` +
		`"express_enabled":true,"udp_enabled":true,"tx_pkts_delta":1000,"eligible_tx_pkts_delta":1000,"rx_pkts_delta":1000,` +
		`"fallback_pkts":0,"coverage":1,"resource_utilization_before_percent":1,"resource_utilization_percent":1,` +
		`"verdict":"srd_carried_traffic","reason":"SRD carried 1000 of 1000 eligible packets (100%)"`
	r := srd.Coverage(before, after)
	b, err := json.Marshal(r)
	require.NoError(t, err)
	assert.Equal(t, "{"+coverage+"}", string(b))
	var back srd.CoverageReport
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, r, back)

	w := srd.NewWindow(before, after)
	b, err = json.Marshal(w)
	require.NoError(t, err)
	assert.Equal(t, "{"+coverage+`,"bw_in_allowance_exceeded":0,"bw_out_allowance_exceeded":0,"pps_allowance_exceeded":7,`+
		`"conntrack_allowance_exceeded":0,"linklocal_allowance_exceeded":0,"limited_by":["pps_allowance_exceeded"]}`, string(b))
	var wback srd.Window
	require.NoError(t, json.Unmarshal(b, &wback))
	assert.Equal(t, w, wback)

	// Without statistics: no mode text, and the allowance note.
	w = srd.NewWindow(&ethtool.Snapshot{Interface: "lo"}, &ethtool.Snapshot{Interface: "lo"})
	b, err = json.Marshal(w)
	require.NoError(t, err)
	assert.Equal(t, `{"interface":"lo","window_seconds":0,"srd_mode":0,"srd_mode_text":"","express_enabled":false,"udp_enabled":false,`+
		`"tx_pkts_delta":0,"eligible_tx_pkts_delta":0,"rx_pkts_delta":0,"fallback_pkts":0,"coverage":0,`+
		`"resource_utilization_before_percent":0,"resource_utilization_percent":0,"verdict":"no_srd_statistics",`+
		`"reason":"no ena_srd_* statistics in either snapshot: not an ENA interface, an ENA driver older than 2.8.0, or a device that does not report SRD information",`+
		`"allowance_note":"no *_allowance_exceeded statistics: not an ENA interface, or an ENA driver older than 2.2.10","limited_by":[]}`, string(b))
}

// FuzzWindowJSON feeds Window's and CoverageReport's UnmarshalJSON
// arbitrary input: they never panic, and what they accept marshals to JSON
// that reads back the same.
func FuzzWindowJSON(f *testing.F) {
	w := srd.NewWindow(nil, nil)
	b, _ := json.Marshal(w)
	f.Add(b)
	f.Add([]byte(`{"window_seconds":2.5,"srd_mode":7,"pps_allowance_exceeded":3,"allowance_counters_reset":["pps_allowance_exceeded"],"limited_by":["pps_allowance_exceeded"]}`))
	f.Add([]byte(`{"window_seconds":1e300}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		// Beyond about 100 days a window in float seconds no longer holds
		// every nanosecond, so only shorter ones must read back exactly.
		const exact = 100 * 24 * time.Hour
		var w srd.Window
		if json.Unmarshal(data, &w) == nil && w.Duration.Abs() < exact {
			b, err := json.Marshal(w)
			require.NoError(t, err)
			var back srd.Window
			require.NoError(t, json.Unmarshal(b, &back), "%s", b)
			b2, err := json.Marshal(back)
			require.NoError(t, err)
			require.Equal(t, string(b), string(b2))
		}
		var r srd.CoverageReport
		if json.Unmarshal(data, &r) == nil && r.Duration.Abs() < exact {
			b, err := json.Marshal(r)
			require.NoError(t, err)
			var back srd.CoverageReport
			require.NoError(t, json.Unmarshal(b, &back), "%s", b)
			require.Equal(t, r, back)
		}
	})
}
