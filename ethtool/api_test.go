package ethtool_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/ethtool"
	"github.com/netperfkit/netperfkit/internal/enaapicheck"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAPINilAndZeroInputs calls every exported function with nil, zero and
// negative arguments: none panics or hangs, and each returns an error that
// names the argument or its documented zero result.
func TestAPINilAndZeroInputs(t *testing.T) {
	snap := &ethtool.Snapshot{Interface: "eth0", Stats: ethtool.Stats{{Name: "rx_packets", Value: 5}}}
	for _, c := range []struct {
		name string
		call func(t *testing.T)
	}{
		{"ParseSnapshot(empty text)", func(t *testing.T) {
			_, err := ethtool.ParseSnapshot(strings.NewReader(""))
			assert.ErrorIs(t, err, ethtool.ErrNoStats)
		}},
		{"ParseSnapshot(nil)", func(t *testing.T) {
			s, err := ethtool.ParseSnapshot(nil)
			assert.ErrorContains(t, err, "ethtool: ParseSnapshot: nil io.Reader r")
			require.NotNil(t, s, "an empty Snapshot after an error, never nil")
			assert.Empty(t, s.Stats)
		}},
		{"ParseSnapshot(bad JSON)", func(t *testing.T) {
			s, err := ethtool.ParseSnapshot(strings.NewReader(`{"stats":[`))
			assert.ErrorContains(t, err, "ethtool: snapshot JSON")
			require.NotNil(t, s, "an empty Snapshot after an error, never nil")
			assert.Empty(t, s.Interface)
		}},
		{"ParseSnapshot(JSON without stats)", func(t *testing.T) {
			s, err := ethtool.ParseSnapshot(strings.NewReader(`{"interface":"eth0"}`))
			assert.ErrorIs(t, err, ethtool.ErrNoStats)
			require.NotNil(t, s)
			assert.Empty(t, s.Interface, "nothing of a refused input is kept")
		}},
		{"ParseSnapshot(bad text)", func(t *testing.T) {
			s, err := ethtool.ParseSnapshot(strings.NewReader("no statistic here\n"))
			assert.ErrorContains(t, err, "ethtool: line 1")
			require.NotNil(t, s)
			assert.Empty(t, s.Stats)
		}},
		{"Diff(nil, nil)", func(t *testing.T) {
			d, err := ethtool.Diff(nil, nil)
			require.NoError(t, err)
			require.NotNil(t, d, "an empty Delta, never nil")
			assert.Empty(t, d.Counters)
			assert.Zero(t, d.Duration)
		}},
		{"Diff(nil, after)", func(t *testing.T) {
			d, err := ethtool.Diff(nil, snap)
			require.NoError(t, err)
			c, ok := d.Get("rx_packets")
			require.True(t, ok)
			assert.True(t, c.New, "a nil before reads as a snapshot without statistics")
			assert.Equal(t, uint64(5), c.Increase)
		}},
		{"Diff(before, nil)", func(t *testing.T) {
			d, err := ethtool.Diff(snap, nil)
			require.NoError(t, err)
			assert.Equal(t, []string{"rx_packets"}, d.Removed)
		}},
		{"Diff(eth0, eth1)", func(t *testing.T) {
			other := &ethtool.Snapshot{Interface: "eth1", Stats: ethtool.Stats{{Name: "rx_packets", Value: 9}}}
			d, err := ethtool.Diff(snap, other)
			require.Error(t, err)
			assert.ErrorContains(t, err, `ethtool: Diff: the snapshots are of two interfaces, before of "eth0" and after of "eth1"`)
			require.NotNil(t, d, "an empty Delta after an error, never nil")
			assert.Empty(t, d.Counters, "no delta across interfaces")
			_, found := d.Get("rx_packets")
			assert.False(t, found)
			_, err = ethtool.Diff(other, snap)
			assert.ErrorContains(t, err, `before of "eth1" and after of "eth0"`)
		}},
		{"Diff(unnamed, eth0)", func(t *testing.T) {
			// Text from `ethtool -S` names no interface: it matches any.
			d, err := ethtool.Diff(&ethtool.Snapshot{Stats: ethtool.Stats{{Name: "rx_packets", Value: 2}}}, snap)
			require.NoError(t, err)
			c, _ := d.Get("rx_packets")
			assert.Equal(t, uint64(3), c.Increase)
			assert.Equal(t, "eth0", d.Interface)
		}},
		{"Explain(nil)", func(t *testing.T) { assert.Nil(t, ethtool.Explain(nil)) }},
		{"Explain(empty)", func(t *testing.T) { assert.Nil(t, ethtool.Explain(&ethtool.Delta{})) }},
		{"GroupQueues(nil)", func(t *testing.T) { assert.Zero(t, ethtool.GroupQueues(nil)) }},
		{"IsGauge(empty)", func(t *testing.T) { assert.False(t, ethtool.IsGauge("")) }},
		{"AllowanceCounters", func(t *testing.T) {
			a := ethtool.AllowanceCounters()
			a[0] = "changed"
			assert.Equal(t, "bw_in_allowance_exceeded", ethtool.AllowanceCounters()[0], "each call gives a fresh slice")
		}},
		{"ReadSnapshot(empty)", func(t *testing.T) {
			s, err := ethtool.ReadSnapshot("")
			assert.Error(t, err)
			require.NotNil(t, s, "an empty Snapshot after an error, never nil")
			assert.Empty(t, s.Stats)
			assert.True(t, s.Time.IsZero())
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
		(*ethtool.Client)(nil), &ethtool.Client{},
		(*ethtool.Delta)(nil), &ethtool.Delta{},
		(*ethtool.Snapshot)(nil), &ethtool.Snapshot{},
		(*ethtool.Stats)(nil), &ethtool.Stats{},
		&ethtool.Allowance{}, &ethtool.Counter{}, &ethtool.Finding{}, &ethtool.QueueGroups{},
		&ethtool.Queue{}, &ethtool.QueueTotal{}, &ethtool.RingParams{}, &ethtool.Stat{}, &ethtool.WatchConfig{},
	)
	for _, m := range []string{"Close", "RingParams", "Snapshot", "SnapshotInto", "Watch"} {
		res := got["(*ethtool.Client)(nil)."+m]
		require.NotEmpty(t, res, m)
		assert.ErrorContains(t, res[len(res)-1].(error), "ethtool: nil or zero *Client", m)
		res = got["*ethtool.Client."+m]
		require.NotEmpty(t, res, m)
		assert.ErrorContains(t, res[len(res)-1].(error), "ethtool: nil or zero *Client", m)
	}
	for _, recv := range []string{"(*ethtool.Client)(nil)", "*ethtool.Client"} {
		s := got[recv+".Snapshot"][0].(*ethtool.Snapshot)
		require.NotNil(t, s, recv+".Snapshot: an empty Snapshot after an error, never nil")
		assert.Empty(t, s.Stats)
	}
	assert.Nil(t, got["(*ethtool.Delta)(nil).Clone"][0])
	assert.Equal(t, false, got["(*ethtool.Delta)(nil).Allowance"][1])
	assert.ErrorContains(t, got["(*ethtool.Delta)(nil).UnmarshalJSON"][0].(error), "nil *Delta")
	assert.ErrorContains(t, got["(*ethtool.Stats)(nil).UnmarshalJSON"][0].(error), "nil *Stats")
	assert.ErrorContains(t, got["(*ethtool.Snapshot)(nil).WriteText"][0].(error), "nil *Snapshot")
	assert.ErrorContains(t, got["*ethtool.Snapshot.WriteText"][0].(error), "nil io.Writer w")
	assert.Nil(t, got["(*ethtool.Snapshot)(nil).Clone"][0])
	assert.Equal(t, []string{}, got["*ethtool.Allowance.Exceeded"][0])
}

func TestAPILiveClientArguments(t *testing.T) {
	c, err := ethtool.New()
	if err != nil {
		t.Skipf("no ethtool client on this system: %v", err)
	}
	defer c.Close()
	enaapicheck.Call(t, "Watch(nil ctx)", func() {
		//lint:ignore SA1012 a nil ctx is what is tested
		assert.ErrorContains(t, c.Watch(nil, "lo", nil), "ethtool: Watch: nil context.Context ctx")
	})
	enaapicheck.Call(t, "Watch(negative interval)", func() {
		err := c.Watch(context.Background(), "lo", &ethtool.WatchConfig{Interval: -time.Second})
		assert.Error(t, err)
	})
	enaapicheck.Call(t, "SnapshotInto(nil)", func() {
		assert.ErrorContains(t, c.SnapshotInto("lo", nil), "nil *Snapshot s")
	})
	enaapicheck.Call(t, "Snapshot(empty)", func() {
		_, err := c.Snapshot("")
		assert.ErrorIs(t, err, ethtool.ErrNoInterface)
	})
	enaapicheck.Call(t, "Close twice", func() {
		require.NoError(t, c.Close())
		assert.NoError(t, c.Close())
	})
}

// TestAPIClosedClient uses a Client after Close: every read says the client
// is closed (not the ioctl's "bad file descriptor") and matches os.ErrClosed.
func TestAPIClosedClient(t *testing.T) {
	c, err := ethtool.New()
	if err != nil {
		t.Skipf("no ethtool client on this system: %v", err)
	}
	require.NoError(t, c.Close())
	closed := func(t *testing.T, err error) {
		t.Helper()
		require.Error(t, err)
		assert.ErrorIs(t, err, os.ErrClosed)
		assert.Equal(t, "ethtool: client is closed", err.Error())
		assert.NotErrorIs(t, err, os.ErrNotExist)
	}
	for _, iface := range []string{"lo", "no-such-if0"} {
		enaapicheck.Call(t, "RingParams after Close", func() {
			_, err := c.RingParams(iface)
			closed(t, err)
		})
		enaapicheck.Call(t, "Snapshot after Close", func() {
			s, err := c.Snapshot(iface)
			closed(t, err)
			require.NotNil(t, s, "an empty Snapshot after an error, never nil")
			assert.Empty(t, s.Interface)
		})
		enaapicheck.Call(t, "SnapshotInto after Close", func() {
			s := &ethtool.Snapshot{Interface: iface, Stats: ethtool.Stats{{Name: "a", Value: 1}}}
			closed(t, c.SnapshotInto(iface, s))
			assert.Empty(t, s.Interface, "s holds no snapshot after an error")
		})
		enaapicheck.Call(t, "Watch after Close", func() {
			closed(t, c.Watch(context.Background(), iface, &ethtool.WatchConfig{Interval: time.Millisecond}))
		})
	}
	assert.NoError(t, c.Close(), "closing again is not an error")
}

// TestDeltaJSONShape pins Delta's JSON to the shape it had when its window
// was a float field: "seconds" in seconds, the keys in the same order.
func TestDeltaJSONShape(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	before := &ethtool.Snapshot{Time: t0, Interface: "eth0", Driver: "ena", Stats: ethtool.Stats{{Name: "a", Value: 1}, {Name: "gone", Value: 1}}}
	after := &ethtool.Snapshot{Time: t0.Add(1500 * time.Millisecond), Interface: "eth0", Driver: "ena", Stats: ethtool.Stats{{Name: "a", Value: 4}}}
	d := mustDiff(t, before, after)
	b, err := json.Marshal(d)
	require.NoError(t, err)
	assert.Equal(t, `{"interface":"eth0","driver":"ena","from":"2026-01-01T00:00:00Z","to":"2026-01-01T00:00:01.5Z","seconds":1.5,`+
		`"counters":[{"name":"a","before":1,"after":4,"increase":3,"per_second":2}],"removed":["gone"],"resets":0}`, string(b))
	var back ethtool.Delta
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, *d, back)
	assert.Equal(t, 1500*time.Millisecond, back.Duration)

	// A Delta as a value marshals the same way.
	bv, err := json.Marshal(*d)
	require.NoError(t, err)
	assert.Equal(t, string(b), string(bv))
	assert.Error(t, json.Unmarshal([]byte(`{"seconds":1e300}`), &back), "a window no Duration holds")
}

// FuzzDeltaJSON feeds UnmarshalJSON arbitrary input: it never panics, and
// what it accepts marshals to JSON that reads back to the same Delta.
func FuzzDeltaJSON(f *testing.F) {
	f.Add([]byte(`{"interface":"eth0","driver":"ena","from":"2026-01-01T00:00:00Z","to":"2026-01-01T00:00:01.5Z","seconds":1.5,"counters":[{"name":"a","before":1,"after":4,"increase":3,"per_second":2}],"removed":["gone"],"resets":0}`))
	f.Add([]byte(`{"seconds":-1e-9}`))
	f.Add([]byte(`{"seconds":1e300}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var d ethtool.Delta
		// Beyond about 100 days a window in float seconds no longer holds
		// every nanosecond, so only shorter ones must read back exactly.
		if json.Unmarshal(data, &d) != nil || d.Duration.Abs() >= 100*24*time.Hour {
			return
		}
		b, err := json.Marshal(d)
		require.NoError(t, err)
		var back ethtool.Delta
		require.NoError(t, json.Unmarshal(b, &back), "%s", b)
		b2, err := json.Marshal(back)
		require.NoError(t, err)
		require.Equal(t, string(b), string(b2))
	})
}
