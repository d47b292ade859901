package ethtool

// Allowance holds the ENI allowance counters of the Amazon ENA driver:
// packets queued or dropped because the instance exceeded one of its
// limits. Stats.Allowance gives their levels (packets since the last driver
// reset); Delta.Allowance gives their change over a window, where a counter
// named in Reset holds a lower bound: at least that many packets were
// shaped in the window. Its JSON keys are the counter names.
type Allowance struct {
	BWInExceeded      uint64 `json:"bw_in_allowance_exceeded"`
	BWOutExceeded     uint64 `json:"bw_out_allowance_exceeded"`
	PPSExceeded       uint64 `json:"pps_allowance_exceeded"`
	ConntrackExceeded uint64 `json:"conntrack_allowance_exceeded"`
	LinklocalExceeded uint64 `json:"linklocal_allowance_exceeded"`
	// ConntrackAvailable is the conntrack_allowance_available gauge, the
	// number of further connections that can be tracked before
	// conntrack_allowance_exceeded counts (at the end of a window), and
	// ConntrackAvailableBefore its value at a window's start; nil when the
	// driver does not report it (older than 2.8.1), or, for
	// ConntrackAvailableBefore, for levels or a gauge new in the window.
	ConntrackAvailable       *uint64 `json:"conntrack_allowance_available,omitempty"`
	ConntrackAvailableBefore *uint64 `json:"conntrack_allowance_available_before,omitempty"`
	// Reset, in a window's change, names the allowance counters that
	// restarted, or may have restarted, in the window, in the order of AllowanceCounters. One
	// that went backwards restarted: what it counted before is lost, and
	// its field holds After, the packets shaped since, which the window's
	// delta is at least. When total_resets rose or went backwards, every
	// counter may have restarted (they count since the last driver reset)
	// and climbed back past its old value, so After-Before may understate
	// it; their fields keep After-Before, the one figure that is a lower
	// bound whether or not they restarted (After alone would count what
	// came before the window for a counter the reset left alone). Every
	// field is thus a lower bound, and one above 0 proves the allowance was
	// hit, so Exceeded names it.
	Reset []string `json:"allowance_counters_reset,omitempty"`
}

// AllowanceCounters returns the names of the ENI allowance counters, in the
// order Exceeded reports them; a fresh slice each call.
func AllowanceCounters() []string {
	return []string{statBWIn, statBWOut, statPPS, statConntrack, statLinklocal}
}

// allowanceCounters is AllowanceCounters for the package's own reading.
var allowanceCounters = AllowanceCounters()

// Allowance returns the levels of the allowance counters in s: packets
// shaped since the last driver reset. ok is false when s has no allowance
// counters (not ENA, or a driver older than 2.2).
func (s Stats) Allowance() (a Allowance, ok bool) {
	if _, has := s.Get(statPPS); !has {
		return a, false
	}
	for i, dst := range a.counters() {
		*dst, _ = s.Get(allowanceCounters[i])
	}
	if v, has := s.Get(statConntrackAvl); has {
		a.ConntrackAvailable = &v
	}
	return a, true
}

// counters points at the five counters in the order of AllowanceCounters.
func (a *Allowance) counters() []*uint64 {
	return []*uint64{&a.BWInExceeded, &a.BWOutExceeded, &a.PPSExceeded, &a.ConntrackExceeded, &a.LinklocalExceeded}
}

// Allowance returns the change of the allowance counters in d. ok is false
// when the window has no allowance counters (not ENA, or a driver older
// than 2.2, or a nil d): then there is no delta to show, not a zero one.
// Counters that restarted in the window (see Allowance.Reset) give lower
// bounds.
func (d *Delta) Allowance() (a Allowance, ok bool) {
	if _, has := d.Get(statPPS); !has {
		return a, false
	}
	// A driver reset restarts every allowance counter, whether or not it
	// has climbed back past its old value by the end of the window.
	r, has := d.Get(statTotalResets)
	driverReset := has && !r.New && (r.Increase > 0 || r.Reset)
	for i, dst := range a.counters() {
		name := allowanceCounters[i]
		c, has := d.Get(name)
		if !has {
			continue
		}
		switch {
		case c.Reset:
			a.Reset = append(a.Reset, name)
			*dst = c.After
		case driverReset:
			a.Reset = append(a.Reset, name)
			*dst = c.Increase
		default:
			*dst = c.Increase
		}
	}
	if c, has := d.Get(statConntrackAvl); has {
		after, before := c.After, c.Before
		a.ConntrackAvailable = &after
		if !c.New {
			a.ConntrackAvailableBefore = &before
		}
	}
	return a, true
}

// Exceeded names the allowance counters above 0, in the order of
// AllowanceCounters; empty (not nil) when none is. For a window's change
// these are the allowances hit in the window (a counter in Reset counts
// when its lower bound is above 0): the "limited by" verdict every
// netperfkit tool prints.
func (a Allowance) Exceeded() []string {
	out := []string{}
	for i, v := range a.counters() {
		if *v > 0 {
			out = append(out, allowanceCounters[i])
		}
	}
	return out
}
