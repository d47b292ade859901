package ethtool

// AllowanceDelta is the change of the ENI allowance counters over a window:
// how many packets were queued or dropped because the instance exceeded
// one of its limits. Its JSON keys are the counter names. A counter named
// in Reset holds a lower bound: at least that many packets were shaped in
// the window.
type AllowanceDelta struct {
	BWInExceeded      uint64 `json:"bw_in_allowance_exceeded"`
	BWOutExceeded     uint64 `json:"bw_out_allowance_exceeded"`
	PPSExceeded       uint64 `json:"pps_allowance_exceeded"`
	ConntrackExceeded uint64 `json:"conntrack_allowance_exceeded"`
	LinklocalExceeded uint64 `json:"linklocal_allowance_exceeded"`
	// ConntrackAvailable is the conntrack_allowance_available gauge at the
	// end of the window and ConntrackAvailableBefore at its start; nil when
	// the driver does not report it (older than 2.8.1).
	ConntrackAvailable       *uint64 `json:"conntrack_allowance_available,omitempty"`
	ConntrackAvailableBefore *uint64 `json:"conntrack_allowance_available_before,omitempty"`
	// Reset names the allowance counters that restarted, or may have
	// restarted, in the window, in the order of AllowanceCounters. One
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

// AllowanceCounters are the names of the ENI allowance counters, in the
// order Exceeded reports them.
var AllowanceCounters = []string{statBWIn, statBWOut, statPPS, statConntrack, statLinklocal}

// Allowance returns the change of the allowance counters in d. ok is false
// when the window has no allowance counters (not ENA, or a driver older
// than 2.2): then there is no delta to show, not a zero one. Counters that
// restarted in the window (see AllowanceDelta.Reset) give lower bounds.
func (d *Delta) Allowance() (a AllowanceDelta, ok bool) {
	if _, has := d.Get(statPPS); !has {
		return a, false
	}
	// A driver reset restarts every allowance counter, whether or not it
	// has climbed back past its old value by the end of the window.
	r, has := d.Get(statTotalResets)
	driverReset := has && !r.New && (r.Increase > 0 || r.Reset)
	for i, dst := range []*uint64{&a.BWInExceeded, &a.BWOutExceeded, &a.PPSExceeded, &a.ConntrackExceeded, &a.LinklocalExceeded} {
		name := AllowanceCounters[i]
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

// Exceeded names the allowance counters that grew in the window, in the
// order of AllowanceCounters; empty (not nil) when none did. A counter in
// Reset counts when its lower bound is above 0. This is the "limited by"
// verdict every netperfkit tool prints.
func (a AllowanceDelta) Exceeded() []string {
	out := []string{}
	for i, v := range []uint64{a.BWInExceeded, a.BWOutExceeded, a.PPSExceeded, a.ConntrackExceeded, a.LinklocalExceeded} {
		if v > 0 {
			out = append(out, AllowanceCounters[i])
		}
	}
	return out
}
