package ethtool

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

func snap(at time.Duration, s Stats) *Snapshot {
	return &Snapshot{Time: t0.Add(at), Interface: "eth0", Driver: "ena", Stats: s}
}

// mustDiff is Diff of two snapshots that must have a delta.
func mustDiff(t *testing.T, before, after *Snapshot) *Delta {
	t.Helper()
	d, err := Diff(before, after)
	require.NoError(t, err)
	return d
}

func TestDiffFixturesE1(t *testing.T) {
	before := snap(0, parseFile(t, "ena-2.17-same-az-before.txt"))
	after := snap(15*time.Second, parseFile(t, "ena-2.17-same-az-after.txt"))
	d := mustDiff(t, before, after)
	assert.Equal(t, 15*time.Second, d.Duration)
	assert.Len(t, d.Counters, 335)
	assert.Zero(t, d.Resets)
	assert.Empty(t, d.Removed)
	assert.Equal(t, uint64(28195047), increase(d, "ena_srd_tx_pkts"))
	assert.Equal(t, uint64(28195063), increase(d, "ena_srd_eligible_tx_pkts"))
	c, ok := d.Get("ena_srd_tx_pkts")
	require.True(t, ok)
	assert.InDelta(t, 28195047.0/15, c.PerSecond, 1e-6)
	mode, ok := d.Get("ena_srd_mode")
	require.True(t, ok)
	assert.True(t, mode.Gauge)
	assert.Zero(t, mode.Increase)
	assert.Equal(t, uint64(3), mode.After)
}

func TestDiffResetIsNotWrapped(t *testing.T) {
	d := mustDiff(t, snap(0, Stats{{"tx_timeout", 5}, {"queue_0_tx_cnt", 1000}, {"conntrack_allowance_available", 100}}),
		snap(time.Second, Stats{{"tx_timeout", 6}, {"queue_0_tx_cnt", 10}, {"conntrack_allowance_available", 40}}))
	assert.Equal(t, 1, d.Resets)
	c, _ := d.Get("queue_0_tx_cnt")
	assert.True(t, c.Reset)
	assert.Zero(t, c.Increase)
	assert.Zero(t, c.PerSecond)
	g, _ := d.Get("conntrack_allowance_available")
	assert.False(t, g.Reset, "a gauge going down is not a reset")
	assert.Equal(t, uint64(1), increase(d, "tx_timeout"))
	for _, c := range d.Counters {
		assert.Less(t, c.Increase, uint64(1<<63), c.Name)
	}
}

func TestDiffByNameWhenOrderDiffers(t *testing.T) {
	before := snap(0, Stats{{"a", 1}, {"b", 10}, {"gone", 3}})
	after := snap(2*time.Second, Stats{{"b", 30}, {"a", 2}, {"queue_9_rx_cnt", 7}})
	d := mustDiff(t, before, after)
	assert.Equal(t, []Counter{
		{Name: "b", Before: 10, After: 30, Increase: 20, PerSecond: 10},
		{Name: "a", Before: 1, After: 2, Increase: 1, PerSecond: 0.5},
		{Name: "queue_9_rx_cnt", After: 7, Increase: 7, PerSecond: 3.5, New: true},
	}, d.Counters)
	assert.Equal(t, []string{"gone"}, d.Removed)
	assert.Equal(t, Stats{{"b", 20}, {"a", 1}, {"queue_9_rx_cnt", 7}}, d.increases())
	assert.Len(t, d.Changed(), 3)
}

func TestDiffWithoutTimes(t *testing.T) {
	d := mustDiff(t, &Snapshot{Stats: Stats{{"a", 1}}}, &Snapshot{Stats: Stats{{"a", 5}}})
	assert.Zero(t, d.Duration)
	c, _ := d.Get("a")
	assert.Equal(t, uint64(4), c.Increase)
	assert.Zero(t, c.PerSecond)
}

func TestDeltaCloneIsIndependent(t *testing.T) {
	d := mustDiff(t, snap(0, Stats{{"a", 1}}), snap(time.Second, Stats{{"a", 2}}))
	c := d.Clone()
	d.Counters[0].Increase = 99
	assert.Equal(t, uint64(1), c.Counters[0].Increase)
}

func TestWatchDeltas(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := uint64(0)
	sample := func(s *Snapshot) error {
		n += 100
		s.Time = t0.Add(time.Duration(n) * time.Millisecond)
		s.Interface = "eth0"
		s.Stats = append(s.Stats[:0], Stat{"rx_packets", n}, Stat{"peer_ifindex", 4})
		return nil
	}
	var got []uint64
	err := watch(ctx, &WatchConfig{Interval: time.Millisecond, OnDelta: func(d Delta) {
		got = append(got, increase(&d, "rx_packets"))
		assert.Equal(t, 100*time.Millisecond, d.Duration)
		assert.Equal(t, 1000.0, d.Counters[0].PerSecond)
		if len(got) == 3 {
			cancel()
		}
	}}, sample)
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, []uint64{100, 100, 100}, got)
}

func TestWatchErrors(t *testing.T) {
	boom := errors.New("boom")
	err := watch(context.Background(), &WatchConfig{Interval: -1}, nil)
	assert.ErrorContains(t, err, "WatchConfig.Interval must be positive")

	err = watch(context.Background(), nil, func(*Snapshot) error { return boom })
	assert.ErrorIs(t, err, boom)

	calls := 0
	err = watch(context.Background(), &WatchConfig{Interval: time.Millisecond}, func(s *Snapshot) error {
		calls++
		if calls == 3 {
			return boom
		}
		s.Stats = append(s.Stats[:0], Stat{"a", uint64(calls)})
		return nil
	})
	assert.ErrorIs(t, err, boom)

	// A cancel while waiting for the next sample (an hour away) returns
	// without waiting for it and without sampling again. The bound is a
	// liveness bound against a hang, not the speed of the return.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	sampled := make(chan struct{})
	samples := 0
	go func() {
		done <- watch(ctx, &WatchConfig{Interval: time.Hour}, func(*Snapshot) error {
			if samples++; samples == 1 {
				close(sampled)
			}
			return nil
		})
	}()
	<-sampled // the first sample is taken: watch now waits for the tick
	cancel()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, 1, samples, "no sample after the cancel")
	case <-time.After(10 * time.Second):
		t.Fatal("watch did not return after cancel: it waited for the next tick")
	}
}

func TestWatchIsAllocationLight(t *testing.T) {
	stats := parseFile(t, "ena-2.17-same-az-before.txt")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	samples := 0
	sample := func(s *Snapshot) error {
		samples++
		s.Time = t0.Add(time.Duration(samples) * time.Second)
		s.Stats = append(s.Stats[:0], stats...)
		s.Stats[0].Value = uint64(samples)
		return nil
	}
	deltas := 0
	var m0, m1 uint64
	require.ErrorIs(t, watch(ctx, &WatchConfig{Interval: time.Microsecond, OnDelta: func(d Delta) {
		deltas++
		switch deltas {
		case 3:
			m0 = mallocs()
		case 203:
			m1 = mallocs()
			cancel()
		}
	}}, sample), context.Canceled)
	// After warm-up, 200 samples of a 335-counter ENA interface: a few
	// allocations of the ticker machinery at most, not one per counter.
	assert.Less(t, m1-m0, uint64(200), "allocations over 200 samples")
}

func TestSnapshotJSONAndText(t *testing.T) {
	s := snap(0, parseFile(t, "doc-tabs.txt"))
	s.DriverVersion = "2.17.0g"
	b, err := json.Marshal(s)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"interface":"eth0","driver":"ena"`)
	assert.Contains(t, string(b), `"stats":{"bw_in_allowance_exceeded":0,`)
	assert.Contains(t, string(b), `"ena_srd_tx_pkts":28195047`)

	back, err := ParseSnapshot(strings.NewReader("\n  " + string(b)))
	require.NoError(t, err)
	assert.True(t, s.Time.Equal(back.Time))
	back.Time = s.Time
	assert.Equal(t, s, back)

	var txt strings.Builder
	require.NoError(t, s.WriteText(&txt))
	fromText, err := ParseSnapshot(strings.NewReader(txt.String()))
	require.NoError(t, err)
	assert.Equal(t, s.Stats, fromText.Stats)
	assert.Empty(t, fromText.Interface)

	_, err = ParseSnapshot(strings.NewReader(`{"interface":"eth0","stats":{}}`))
	assert.ErrorIs(t, err, ErrNoStats)
	_, err = ParseSnapshot(strings.NewReader(`{"interface":`))
	assert.Error(t, err)
	c := s.Clone()
	c.Stats[0].Value = 42
	assert.Zero(t, s.Stats[0].Value)
}

func TestDiffDuplicateNamesByOccurrence(t *testing.T) {
	before := Stats{{"a", 1}, {"a", 100}, {"gone", 5}, {"x", 1}, {"x", 2}}
	// One more statistic, so the names differ and matching is by name.
	after := Stats{{"a", 2}, {"new", 0}, {"a", 101}, {"a", 7}, {"x", 3}}
	d := mustDiff(t, snap(0, before), snap(time.Second, after))
	assert.Equal(t, []Counter{
		{Name: "a", Before: 1, After: 2, Increase: 1, PerSecond: 1},
		{Name: "new", New: true},
		{Name: "a", Before: 100, After: 101, Increase: 1, PerSecond: 1},
		{Name: "a", After: 7, Increase: 7, PerSecond: 7, New: true},
		{Name: "x", Before: 1, After: 3, Increase: 2, PerSecond: 2},
	}, d.Counters)
	assert.Equal(t, []string{"gone", "x"}, d.Removed, "the second x is gone")
	assert.Zero(t, d.Resets)

	// Same names in the same order (the fast path) agree.
	same := mustDiff(t, snap(0, Stats{{"a", 1}, {"a", 100}}), snap(time.Second, Stats{{"a", 2}, {"a", 101}}))
	grown := mustDiff(t, snap(0, Stats{{"a", 1}, {"a", 100}}), snap(time.Second, Stats{{"a", 2}, {"a", 101}, {"b", 0}}))
	assert.Equal(t, same.Counters, grown.Counters[:2])
}

// increase is the increase of the statistic called name in d, 0 when it is
// absent, reset or a gauge.
func increase(d *Delta, name string) uint64 {
	c, _ := d.Get(name)
	return c.Increase
}
