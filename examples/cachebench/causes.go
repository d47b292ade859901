package main

import (
	"fmt"
	"io"
	"time"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/examples/internal/cachecli"
)

// printCauses says, per engine and mode, what the runs' connection
// set-ups waited on (cache.Causes, summed over the runs) and which cause
// holds each run's p99, when one does.
func printCauses(w io.Writer, o *output) {
	first := true
	for _, a := range o.Results {
		connects := map[string]int64{}
		added := map[string]time.Duration{}
		var tails []string
		from := ""
		for i, r := range a.Results {
			if r == nil {
				continue
			}
			for k, n := range r.Causes.Connects {
				connects[k] += n
				added[k] += r.Causes.Added[k]
			}
			if r.Causes.Tail != "" {
				tails = append(tails, fmt.Sprintf("run %d: %s", i+1, r.Causes.Tail))
			}
			if from == "" {
				from = r.Causes.From
			}
		}
		if len(connects) == 0 && a.Mode != cache.ConnectPerOp {
			continue
		}
		if first {
			fmt.Fprintln(w)
			first = false
		}
		fmt.Fprintf(w, "%s %s waited on: %s\n", a.Engine, a.Mode, cachecli.CausesText(cache.Causes{Connects: connects, Added: added}))
		for _, t := range tails {
			fmt.Fprintf(w, "  %s\n", t)
		}
		if len(connects) > 0 && from != "" {
			fmt.Fprintf(w, "  (counted from %s)\n", from)
		}
	}
}
