package median

import (
	"fmt"
	"strings"

	"github.com/netperfkit/netperfkit/cache"
)

// DebrisText describes the connect-per-op runs' TIME_WAIT debris, one run
// after another: the sockets in TIME_WAIT towards the endpoint before ->
// after each run, the share of the ephemeral port range they blocked, and
// in how many runs the port search was what limited the rate
// (cache.LimitedByPorts). It is "" when no run read the ports (pooled
// runs, or not linux). A nil r gives "".
func (r *Result) DebrisText() string {
	if r == nil {
		return ""
	}
	var runs []string
	limited := 0
	for _, x := range r.Results {
		if x == nil || x.Ports == nil {
			continue
		}
		p := x.Ports
		runs = append(runs, fmt.Sprintf("%d -> %d (%.0f%% -> %.0f%%)", p.TimeWaitBefore, p.TimeWaitAfter, 100*p.BlockedBefore, 100*p.BlockedAfter))
		if p.LimitedBy != "" {
			limited++
		}
	}
	if len(runs) == 0 {
		return ""
	}
	s := strings.Join(runs, "; ")
	if limited > 0 {
		s += fmt.Sprintf("; limited by: %s in %d of %d runs", cache.LimitedByPorts, limited, len(runs))
	}
	return s
}
