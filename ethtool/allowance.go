package ethtool

// AllowanceDelta is the change of the ENI allowance counters over a window:
// how many packets were queued or dropped because the instance exceeded
// one of its limits. Its JSON keys are the counter names.
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
	// Reset names the allowance counters that went backwards (a driver
	// reset): their delta is unknown and reads 0.
	Reset []string `json:"allowance_counters_reset,omitempty"`
}

// AllowanceCounters are the names of the ENI allowance counters, in the
// order Exceeded reports them.
var AllowanceCounters = []string{statBWIn, statBWOut, statPPS, statConntrack, statLinklocal}

// Allowance returns the change of the allowance counters in d. ok is false
// when the window has no allowance counters (not ENA, or a driver older
// than 2.2): then there is no delta to show, not a zero one.
func (d *Delta) Allowance() (a AllowanceDelta, ok bool) {
	if _, has := d.Get(statPPS); !has {
		return a, false
	}
	for name, dst := range map[string]*uint64{
		statBWIn: &a.BWInExceeded, statBWOut: &a.BWOutExceeded, statPPS: &a.PPSExceeded,
		statConntrack: &a.ConntrackExceeded, statLinklocal: &a.LinklocalExceeded,
	} {
		c, has := d.Get(name)
		if !has {
			continue
		}
		if c.Reset {
			a.Reset = append(a.Reset, name)
		}
		*dst = c.Increase
	}
	if len(a.Reset) > 1 {
		// Keep the order of AllowanceCounters, not the map's.
		a.Reset = inOrder(a.Reset)
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
// order of AllowanceCounters; empty (not nil) when none did. This is the
// "limited by" verdict every netperfkit tool prints.
func (a AllowanceDelta) Exceeded() []string {
	out := []string{}
	for i, v := range []uint64{a.BWInExceeded, a.BWOutExceeded, a.PPSExceeded, a.ConntrackExceeded, a.LinklocalExceeded} {
		if v > 0 {
			out = append(out, AllowanceCounters[i])
		}
	}
	return out
}

func inOrder(names []string) []string {
	out := make([]string, 0, len(names))
	for _, n := range AllowanceCounters {
		for _, m := range names {
			if m == n {
				out = append(out, n)
			}
		}
	}
	return out
}
