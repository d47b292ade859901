package main

import (
	"fmt"
	"io"
)

// printDebris prints, per connect-per-op run, the TIME_WAIT sockets towards
// the endpoint before and after it and the share of the ephemeral port
// range blocked (issue 31): one run's debris can slow the next one's
// connects, and this says which regime each run met.
func printDebris(w io.Writer, o *output) {
	var lines []string
	for _, a := range o.Results {
		if text := a.DebrisText(); text != "" {
			lines = append(lines, fmt.Sprintf("  %s %s: %s", a.Engine, a.Mode, text))
		}
	}
	if len(lines) == 0 {
		return
	}
	fmt.Fprintln(w, "\nconnect-per-op debris, per run: TIME_WAIT towards the endpoint before -> after (share of the ephemeral port range blocked: held and not reusable)")
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
}
