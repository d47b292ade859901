// Command anchors measures netperfkit against the tools it is compared with
// (the anchors of docs/benchmarks.md) and writes docs/anchors.json, from
// which README.md's and docs/benchmarks.md's tables are rendered.
//
//	go run ./scripts/anchors [flags] [NAME...]   # every anchor, or the ones named
//	go run ./scripts/anchors -render             # rewrite the tables from the JSON
//	go run ./scripts/anchors -check              # the figures are of HEAD's code
//	go run ./scripts/anchors -list               # the anchors' names
//
// Each anchor runs its comparison as docs/benchmarks.md describes it (the
// scripts under scripts/bench and the benchmarks they name), in rounds that
// alternate which tool goes first, and records each round's figures and
// ratios and their median. Before each anchor it waits an idle pause and
// judges the machine by what other programs did meanwhile: above the
// thresholds it records "busy" instead of a ratio (-force still runs the
// rounds and keeps their figures, never a median). Naming anchors replaces
// only their entries in the JSON.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

type options struct {
	rounds   int
	short    bool
	pause    time.Duration
	limits   limits
	force    bool
	out      string
	timeout  time.Duration
	render   bool
	check    bool
	list     bool
	selected []string
}

func parseFlags(args []string) (*options, error) {
	fs := flag.NewFlagSet("anchors", flag.ContinueOnError)
	o := &options{}
	// 7: over 5, the 5000/s open-loop's kernel-view cost read which of
	// its two modes each run fell in (docs/benchmarks.md, issue 42).
	fs.IntVar(&o.rounds, "rounds", 7, "alternating rounds per anchor")
	fs.BoolVar(&o.short, "short", false, "1-second runs: shows that each anchor runs; its figures judge nothing")
	fs.DurationVar(&o.pause, "pause", 10*time.Second, "idle pause before each anchor, over which the load is read")
	fs.Float64Var(&o.limits.maxBusy, "max-busy", 25, "busy above this percent of all CPUs' time used during the pause")
	fs.Float64Var(&o.limits.maxStall, "max-stall", 10, "busy above this percent of the pause with a task waiting for a CPU (PSI)")
	fs.BoolVar(&o.force, "force", false, "run the rounds on a busy machine too (their figures are kept, no median)")
	fs.StringVar(&o.out, "out", "docs/anchors.json", "results file, relative to the module root")
	fs.DurationVar(&o.timeout, "timeout", 8*time.Minute, "longest run of one anchor")
	fs.BoolVar(&o.render, "render", false, "rewrite README.md's and docs/benchmarks.md's tables from the results file")
	fs.BoolVar(&o.check, "check", false, "fail unless every measured entry's commit differs from HEAD only in docs/ and README.md")
	fs.BoolVar(&o.list, "list", false, "print the anchors' names")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if o.rounds < 1 {
		return nil, fmt.Errorf("anchors: -rounds %d: at least 1", o.rounds)
	}
	o.selected = fs.Args()
	for _, n := range o.selected {
		if anchorNamed(n) == nil {
			return nil, fmt.Errorf("anchors: no anchor %q (-list names them)", n)
		}
	}
	return o, nil
}

// moduleRoot returns the directory of the go.mod above the working directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("anchors: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("anchors: no go.mod above the working directory")
		}
		dir = parent
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	o, err := parseFlags(args)
	if err != nil {
		return err
	}
	if o.list {
		for _, a := range anchors {
			fmt.Printf("%-24s %s\n", a.name, a.title)
		}
		return nil
	}
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	path := o.out
	if !filepath.IsAbs(path) {
		path = filepath.Join(root, path)
	}
	f, err := readFile(path)
	if err != nil {
		return err
	}
	switch {
	case o.render:
		return render(root, f)
	case o.check:
		return checkCommits(ctx, root, f)
	}
	return pass(ctx, root, path, f, o)
}

// pass runs the selected anchors (all when none is named), writing the
// results file after each one.
func pass(ctx context.Context, root, path string, f *File, o *options) error {
	bin, err := os.MkdirTemp("", "anchors-bin-")
	if err != nil {
		return fmt.Errorf("anchors: %w", err)
	}
	defer os.RemoveAll(bin)
	e := &env{root: root, bin: bin, rounds: o.rounds, short: o.short, log: os.Stderr,
		built: map[string]string{}, shared: map[string]*sharedRun{}}
	commit, err := commitOf(ctx, root)
	if err != nil {
		return err
	}
	host := readHost()
	todo := anchors
	if len(o.selected) > 0 {
		todo = nil
		for _, n := range o.selected {
			todo = append(todo, anchorNamed(n))
		}
	}
	start := time.Now()
	for _, a := range todo {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		ent := runAnchor(ctx, e, a, o)
		ent.Commit, ent.Host = commit, host
		merge(f, []*Entry{ent})
		if err := writeFile(path, f); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "anchors: %s: %s\n", a.name, summaryLine(ent))
	}
	fmt.Fprintf(os.Stderr, "anchors: %d anchors in %v; wrote %s\n", len(todo), time.Since(start).Round(time.Second), o.out)
	return nil
}

// runAnchor judges the load, runs one anchor and returns its entry.
func runAnchor(ctx context.Context, e *env, a *anchor, o *options) *Entry {
	ent := &Entry{Name: a.name, Title: a.title, Method: "docs/benchmarks.md#" + a.section,
		Date: time.Now().UTC().Format(time.RFC3339)}
	fmt.Fprintf(os.Stderr, "anchors: %s: idle pause of %v\n", a.name, o.pause)
	ld, err := measureLoad(ctx, o.pause, o.limits)
	if err != nil {
		ent.Status, ent.Reason = statusFailed, err.Error()
		return ent
	}
	ent.Load, e.curLoad = ld, ld
	agreementAnchor := a.name == "ethtool" || a.name == "node-exporter"
	if ld.Busy && !o.force && !agreementAnchor {
		ent.Status, ent.Reason = statusBusy, "too busy to judge; not run"
		return ent
	}
	e.agreeOnly = ld.Busy && !o.force
	actx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	out, err := a.run(actx, e)
	var sk *skipError
	switch {
	case errors.As(err, &sk):
		ent.Status, ent.Reason = statusSkipped, sk.why
		return ent
	case err != nil:
		ent.Status, ent.Reason = statusFailed, strings.TrimPrefix(err.Error(), "anchors: ")
		return ent
	}
	if out.load != nil { // a run shared with an earlier anchor: its load
		ent.Load = out.load
	}
	ent.Commands, ent.Rounds, ent.Agreement = out.commands, out.rounds, out.agreement
	switch {
	case e.agreeOnly:
		ent.Status, ent.Reason = statusBusy, "too busy to time; the agreement was checked"
		return ent
	case ent.Load.Busy:
		ent.Status, ent.Reason = statusBusy, "too busy to judge: the rounds' figures are kept, no median"
		return ent
	}
	if o.short {
		ent.Status, ent.Reason = statusBusy, "-short: 1-second runs show that the anchor runs and judge nothing"
		return ent
	}
	ent.Status = statusMeasured
	summarize(ent, a)
	return ent
}

// summaryLine is one anchor's outcome for the terminal.
func summaryLine(e *Entry) string {
	var parts []string
	parts = append(parts, e.Status)
	if e.Reason != "" {
		parts = append(parts, e.Reason)
	}
	if e.Load != nil {
		parts = append(parts, e.Load.String())
	}
	if e.Agreement != nil {
		parts = append(parts, fmt.Sprintf("agreement %d of %d", e.Agreement.Agree, e.Agreement.Compared))
	}
	for _, r := range e.Rounds {
		var rs []string
		for k, v := range r.Ratios {
			rs = append(rs, fmt.Sprintf("%s %.2fx", k, v))
		}
		slices.Sort(rs)
		parts = append(parts, "round: "+strings.Join(rs, ", "))
	}
	for _, r := range e.Ratios {
		parts = append(parts, fmt.Sprintf("%s %.2fx [%.2f-%.2f]", r.Label, r.Median, r.Min, r.Max))
	}
	return strings.Join(parts, "; ")
}
