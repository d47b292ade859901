package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/cache/median"
)

// A mode whose attempts failed more than half the time reads as failed: its
// percentiles are those of error replies (a server in protected mode answers
// DENIED in microseconds) or of timeouts, not of the operation, so the
// tables show the failure and its first error instead, and no ratio or U
// test uses them. Operations cancelled as a run ends count for neither side.
const failedRule = "more than half of its attempts failed"

// ModeFailure says that one engine and mode failed on an endpoint: more
// than half of its attempts, over all its runs, failed.
type ModeFailure struct {
	// Failed is always true: report.json readers test it beside the old keys.
	Failed bool `json:"failed"`
	// Attempts and Errors are summed over the runs, without the operations
	// cancelled as a run ended.
	Attempts int64 `json:"attempts"`
	Errors   int64 `json:"errors"`
	// FirstError is the first failure's message ("" when none is known).
	FirstError string `json:"first_error"`
}

// maxNoteError bounds the first error as the tables' notes print it (in
// runes): a server's error can run to a paragraph (redis's DENIED is 850
// characters). report.json keeps all of it.
const maxNoteError = 200

// String says what failed and the first error, as the tables' notes print
// it.
func (f *ModeFailure) String() string {
	s := f.counts()
	// One line: glide's messages end in blank lines.
	if e := []rune(strings.Join(strings.Fields(f.FirstError), " ")); len(e) > maxNoteError {
		s += "; first error: " + string(e[:maxNoteError]) + "…"
	} else if len(e) > 0 {
		s += "; first error: " + string(e)
	}
	return s
}

// counts says how many attempts failed.
func (f *ModeFailure) counts() string {
	return fmt.Sprintf("%d of %d attempts failed (%.0f%%)", f.Errors, f.Attempts, 100*float64(f.Errors)/float64(max(f.Attempts, 1)))
}

// mostlyFailed applies the rule to counts without the cancelled operations.
// No attempt is no failure: nothing ran (a run cancelled at once), and the
// workload's error, if any, says why.
func mostlyFailed(attempts, errors int64) bool {
	return attempts > 0 && 2*errors > attempts
}

// judged returns a run's or a mode's attempts and failures, the operations
// cancelled as it ended left out.
func judged(attempts, errors int64, byKind map[cache.ErrorKind]int64) (int64, int64) {
	c := byKind[cache.ErrCanceled]
	return attempts - c, errors - c
}

// modeFailure returns a's failure, or nil when a did not fail (nil a did not
// run: there is nothing to show).
func modeFailure(a *median.Result) *ModeFailure {
	if a == nil {
		return nil
	}
	att, errs := judged(a.Attempts, a.Errors, a.ErrorsByKind)
	if !mostlyFailed(att, errs) {
		return nil
	}
	return &ModeFailure{Failed: true, Attempts: att, Errors: errs, FirstError: firstError(a)}
}

// runFailed applies the rule to one run: its latencies describe failures.
func runFailed(r *cache.RunResult) bool {
	return mostlyFailed(judged(r.Attempts, r.Errors, r.ErrorsByKind))
}

// firstError is a's first failure (median.Result.FirstError), or, in a
// report.json written before cache kept it, the first failing run's example
// of its most frequent kind other than a cancel (the first in name order on
// a tie).
func firstError(a *median.Result) string {
	if a.FirstError != "" {
		return a.FirstError
	}
	for _, r := range a.Results {
		if r == nil {
			continue
		}
		kinds := make([]cache.ErrorKind, 0, len(r.ErrorExamples))
		for k := range r.ErrorExamples {
			if k != cache.ErrCanceled {
				kinds = append(kinds, k)
			}
		}
		slices.Sort(kinds)
		best := cache.ErrorKind("")
		for _, k := range kinds {
			if best == "" || r.ErrorsByKind[k] > r.ErrorsByKind[best] {
				best = k
			}
		}
		if best != "" {
			return r.ErrorExamples[best]
		}
	}
	return ""
}

// noRatio says why a ratio row has no numbers: a side failed, or "" when
// both sides can be compared.
func noRatio(label string, a *median.Result) string {
	if f := modeFailure(a); f != nil {
		return fmt.Sprintf("%s failed: %s", label, f.counts())
	}
	return ""
}
