package ethtool

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"
)

// Counter is the change of one statistic between two snapshots.
type Counter struct {
	Name   string `json:"name"`
	Before uint64 `json:"before"`
	After  uint64 `json:"after"`
	// Increase is After-Before for a counter that moved forward. It is 0
	// for a Reset counter (what happened across the reset is unknown; After
	// is a lower bound) and for a Gauge.
	Increase uint64 `json:"increase"`
	// PerSecond is Increase divided by the window; 0 when the window has
	// no length.
	PerSecond float64 `json:"per_second"`
	// Reset is set when a counter went backwards: the driver or device
	// restarted it between the snapshots.
	Reset bool `json:"reset,omitempty"`
	// Gauge is set for statistics that are levels, not counters (see
	// IsGauge); read Before and After for them.
	Gauge bool `json:"gauge,omitempty"`
	// New is set when the statistic exists only in the later snapshot (a
	// queue was added); Before is then 0 and Increase is After.
	New bool `json:"new,omitempty"`
}

// Delta is the change of an interface's statistics over a window. In JSON
// the window's length is "seconds", a number of seconds.
type Delta struct {
	Interface string
	Driver    string
	From      time.Time
	To        time.Time
	// Duration is the window's length, To - From; 0 when either snapshot
	// carries no time.
	Duration time.Duration
	// Counters follows the order of the later snapshot.
	Counters []Counter
	// Removed names the statistics present only in the earlier snapshot,
	// in its order (a duplicated name once per missing occurrence).
	Removed []string
	// Resets counts the counters that went backwards.
	Resets int
}

// deltaJSON is Delta's JSON shape, the window in seconds.
type deltaJSON struct {
	Interface string    `json:"interface"`
	Driver    string    `json:"driver"`
	From      time.Time `json:"from"`
	To        time.Time `json:"to"`
	Seconds   float64   `json:"seconds"`
	Counters  []Counter `json:"counters"`
	Removed   []string  `json:"removed,omitempty"`
	Resets    int       `json:"resets"`
}

// MarshalJSON writes the Delta with its window in seconds ("seconds").
func (d Delta) MarshalJSON() ([]byte, error) {
	return json.Marshal(deltaJSON{
		Interface: d.Interface, Driver: d.Driver, From: d.From, To: d.To, Seconds: d.Duration.Seconds(),
		Counters: d.Counters, Removed: d.Removed, Resets: d.Resets,
	})
}

// UnmarshalJSON reads what MarshalJSON writes; "seconds" is rounded to the
// nearest nanosecond.
func (d *Delta) UnmarshalJSON(data []byte) error {
	if d == nil {
		return errors.New("ethtool: Delta.UnmarshalJSON: nil *Delta")
	}
	var w deltaJSON
	if err := json.Unmarshal(data, &w); err != nil {
		return fmt.Errorf("ethtool: delta JSON: %w", err)
	}
	dur, err := secondsDuration(w.Seconds)
	if err != nil {
		return fmt.Errorf("ethtool: delta JSON: seconds: %w", err)
	}
	*d = Delta{
		Interface: w.Interface, Driver: w.Driver, From: w.From, To: w.To, Duration: dur,
		Counters: w.Counters, Removed: w.Removed, Resets: w.Resets,
	}
	return nil
}

// secondsDuration converts a JSON number of seconds into a Duration,
// refusing what a Duration cannot hold.
func secondsDuration(s float64) (time.Duration, error) {
	ns := math.Round(s * 1e9)
	if math.IsNaN(ns) || ns > math.MaxInt64 || ns < math.MinInt64 {
		return 0, fmt.Errorf("%v out of range", s)
	}
	return time.Duration(ns), nil
}

// IsGauge reports whether the statistic called name is a level rather than
// a monotonic counter, so that a lower value is not a reset: ENA's
// ena_srd_mode, ena_srd_resource_utilization, conntrack_allowance_available
// and num_of_active_io_queues, and veth's peer_ifindex.
func IsGauge(name string) bool {
	switch name {
	case "ena_srd_mode", "ena_srd_resource_utilization", "conntrack_allowance_available",
		"num_of_active_io_queues", "peer_ifindex":
		return true
	}
	return false
}

// Diff returns the change from before to after, matching statistics by name.
// A name a driver reports more than once is matched by occurrence: its k-th
// statistic after with its k-th before; occurrences only after are New, and
// occurrences only before are Removed. A nil snapshot reads as an empty one
// taken at no known time, so Diff(nil, nil) is an empty Delta.
//
// Snapshots of two different interfaces have no delta: when both name an
// interface and the names differ, Diff returns an error naming both (a
// snapshot parsed from `ethtool -S` text names none, and matches any). The
// Delta is never nil; after an error it is empty.
func Diff(before, after *Snapshot) (*Delta, error) {
	d := &Delta{}
	return d, d.diff(before, after)
}

// diff is Diff into d. It is apart from Diff so that Diff stays small
// enough to inline, and a Delta that does not escape its caller is not
// allocated.
func (d *Delta) diff(before, after *Snapshot) error {
	if before == nil {
		before = &Snapshot{}
	}
	if after == nil {
		after = &Snapshot{}
	}
	if before.Interface != "" && after.Interface != "" && before.Interface != after.Interface {
		return fmt.Errorf("ethtool: Diff: the snapshots are of two interfaces, before of %q and after of %q", before.Interface, after.Interface)
	}
	d.compute(before, after)
	return nil
}

// compute fills d, reusing its slices, so that Watch does not allocate for
// every sample.
func (d *Delta) compute(before, after *Snapshot) {
	d.Interface = after.Interface
	d.Driver = after.Driver
	d.From, d.To = before.Time, after.Time
	d.Duration = 0
	if !before.Time.IsZero() && !after.Time.IsZero() {
		d.Duration = after.Time.Sub(before.Time)
	}
	if cap(d.Counters) < len(after.Stats) {
		d.Counters = make([]Counter, 0, len(after.Stats))
	}
	d.Counters = d.Counters[:0]
	d.Removed = d.Removed[:0]
	d.Resets = 0

	b, a := before.Stats, after.Stats
	if sameNames(b, a) {
		for i := range a {
			d.add(a[i].Name, b[i].Value, a[i].Value, false)
		}
		return
	}
	// The k-th statistic of a name is matched with the k-th of that name
	// before: next[i] chains the entries of b with b[i]'s name, and
	// first[name] is the earliest one not matched yet (-1 when all are).
	const matched = -2
	first := make(map[string]int, len(b))
	next := make([]int, len(b))
	for i := len(b) - 1; i >= 0; i-- {
		n, ok := first[b[i].Name]
		if !ok {
			n = -1
		}
		next[i] = n
		first[b[i].Name] = i
	}
	for _, st := range a {
		i, ok := first[st.Name]
		if !ok || i < 0 {
			d.add(st.Name, 0, st.Value, true)
			continue
		}
		first[st.Name] = next[i]
		next[i] = matched
		d.add(st.Name, b[i].Value, st.Value, false)
	}
	for i, st := range b {
		if next[i] != matched {
			d.Removed = append(d.Removed, st.Name)
		}
	}
}

func (d *Delta) add(name string, before, after uint64, isNew bool) {
	c := Counter{Name: name, Before: before, After: after, New: isNew, Gauge: IsGauge(name)}
	switch {
	case c.Gauge:
	case after >= before:
		c.Increase = after - before
		if d.Duration > 0 {
			c.PerSecond = float64(c.Increase) / d.Duration.Seconds()
		}
	default:
		c.Reset = true
		d.Resets++
	}
	d.Counters = append(d.Counters, c)
}

func sameNames(a, b Stats) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name {
			return false
		}
	}
	return true
}

// Get returns the change of the statistic called name; false for a nil d.
func (d *Delta) Get(name string) (Counter, bool) {
	if d == nil {
		return Counter{}, false
	}
	for i := range d.Counters {
		if d.Counters[i].Name == name {
			return d.Counters[i], true
		}
	}
	return Counter{}, false
}

// Changed returns the counters that increased or were reset, and the gauges
// whose level changed; nil for a nil d.
func (d *Delta) Changed() []Counter {
	if d == nil {
		return nil
	}
	var out []Counter
	for _, c := range d.Counters {
		if c.Increase > 0 || c.Reset || (c.Gauge && c.Before != c.After) {
			out = append(out, c)
		}
	}
	return out
}

// increases returns each counter's increase as a Stats list, for example to
// group a window's traffic by queue with GroupQueues; nil for a nil d.
func (d *Delta) increases() Stats {
	if d == nil {
		return nil
	}
	out := make(Stats, 0, len(d.Counters))
	for _, c := range d.Counters {
		if !c.Gauge {
			out = append(out, Stat{Name: c.Name, Value: c.Increase})
		}
	}
	return out
}

// Clone returns a copy of d that shares no memory with it, for keeping a
// Delta handed to a Watch callback; nil for a nil d.
func (d *Delta) Clone() *Delta {
	if d == nil {
		return nil
	}
	c := *d
	c.Counters = append([]Counter(nil), d.Counters...)
	c.Removed = append([]string(nil), d.Removed...)
	return &c
}
