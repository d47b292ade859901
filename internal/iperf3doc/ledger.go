package iperf3doc

import (
	"fmt"
	"github.com/netperfkit/netperfkit/internal/flowmodel"
	"strings"
)

// ledger writes one line for a direction's loss ledger when a datagram
// was lost or dropped anywhere: offered, every line that holds some (the
// path always), received, then the lines this host cannot know, grouped
// by reason.
func (t *TextReport) ledger(l *flowmodel.Ledger, download bool) {
	if l == nil || !l.Lost() {
		return
	}
	dir := "upload"
	if download {
		dir = "download"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "ledger (%s): offered %d =", dir, l.Offered)
	var unknown []string
	why := map[string][]string{}
	for _, ln := range l.Lines {
		switch {
		case ln.Count == nil:
			if why[ln.Unknown] == nil {
				unknown = append(unknown, ln.Unknown)
			}
			why[ln.Unknown] = append(why[ln.Unknown], ln.Name)
		case *ln.Count > 0 || ln.Name == "path":
			fmt.Fprintf(&b, " %s %d (%.2g%%)", ln.Name, *ln.Count, percent(*ln.Count, l.Offered))
			if ln.Unknown != "" {
				fmt.Fprintf(&b, " [%s]", ln.Unknown)
			}
			b.WriteString(" +")
		}
	}
	fmt.Fprintf(&b, " received %d", l.Received)
	if l.Reordered > 0 {
		fmt.Fprintf(&b, "; reordered %d", l.Reordered)
	}
	if l.Duplicated != nil && *l.Duplicated > 0 {
		fmt.Fprintf(&b, "; duplicated %d", *l.Duplicated)
	}
	if l.Disagreement != "" {
		fmt.Fprintf(&b, "; %s", l.Disagreement)
	}
	for _, w := range unknown {
		fmt.Fprintf(&b, "; unknown %s: %s", strings.Join(why[w], ", "), w)
	}
	fmt.Fprintln(t.w, b.String())
}
