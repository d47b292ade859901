package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/netperfkit/netperfkit/cache"
)

// printDebris prints, per connect-per-op run, the TIME_WAIT sockets towards
// the endpoint before and after it and the share of the ephemeral port
// range blocked (issue 31): one run's debris can slow the next one's
// connects, and this says which regime each run met.
func printDebris(w io.Writer, o *output) {
	var lines []string
	for _, a := range o.Results {
		var runs []string
		limited := 0
		for _, r := range a.Results {
			if r == nil || r.Ports == nil {
				continue
			}
			p := r.Ports
			runs = append(runs, fmt.Sprintf("%d -> %d (%.0f%% -> %.0f%%)", p.Before.TimeWait, p.After.TimeWait, 100*p.Before.Blocked, 100*p.After.Blocked))
			if p.LimitedBy != "" {
				limited++
			}
		}
		if len(runs) == 0 {
			continue
		}
		l := fmt.Sprintf("  %s %s: %s", a.Engine, a.Mode, strings.Join(runs, "; "))
		if limited > 0 {
			l += fmt.Sprintf("; limited by: %s in %d of %d runs", cache.LimitedByPorts, limited, len(runs))
		}
		lines = append(lines, l)
	}
	if len(lines) == 0 {
		return
	}
	fmt.Fprintln(w, "\nconnect-per-op debris, per run: TIME_WAIT towards the endpoint before -> after (share of the ephemeral port range blocked: held and not reusable)")
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
}
