package cachecli

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/netperfkit/netperfkit/cache"
)

// CausesText prints what connection set-ups waited on, on one line:
// "syn_retransmit 14 (14.3 s)", each cause with its connects and the time
// they added, then the tail; "none" when nothing waited.
func CausesText(c cache.Causes) string {
	names := make([]string, 0, len(c.Connects))
	for k := range c.Connects {
		names = append(names, k)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, k := range names {
		parts = append(parts, fmt.Sprintf("%s %d (%s)", k, c.Connects[k], seconds(c.Added[k])))
	}
	s := strings.Join(parts, ", ")
	if s == "" {
		s = "none"
	}
	if c.Tail != "" {
		s += "; " + c.Tail
	}
	return s
}

// seconds prints d to three figures in seconds or milliseconds.
func seconds(d time.Duration) string {
	if d >= time.Second {
		return fmt.Sprintf("%.3g s", d.Seconds())
	}
	return fmt.Sprintf("%.3g ms", float64(d)/1e6)
}
