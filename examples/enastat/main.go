// Command enastat prints a network interface's driver statistics, read live
// through the ethtool ioctl (no ethtool binary, no root) or from saved
// `ethtool -S` text, with Amazon ENA's allowance and ENA Express (SRD)
// counters explained. It is built only on the public API of
// github.com/netperfkit/netperfkit/ethtool.
//
//	enastat -i eth0                 # snapshot
//	enastat -i eth0 -json           # {"interface": ..., "driver": ..., "stats": {name: value}}
//	enastat -i eth0 -prom           # Prometheus text, node_exporter's ethtool names
//	enastat -i eth0 -watch 1s       # what changed every second, and what it means
//	enastat -f saved.txt            # parse saved `ethtool -S` output (or a -json snapshot)
//	enastat -before a.txt -after b.txt  # what changed between two saved snapshots, and which allowance was hit
//
// Flags: -i IFACE, -f FILE, -before FILE -after FILE, -watch INTERVAL (with
// -i), -n COUNT (with -watch: stop after COUNT intervals), -queues (per-queue
// table with totals), -prom, -json; -watch and -before/-after exclude -prom
// and -queues, and a flag that would be ignored is a usage error. A window (-before/-after, and each -watch interval)
// ends with "limited by": the allowance counters that grew
// (ethtool.Allowance.Exceeded, the verdict srdcheck and the srd package
// give); with -json, -before/-after prints the allowance deltas under their
// counter names, limited_by and the whole delta.
// Exit status: 0 on success, 1 when the statistics cannot be read (an
// interface without statistics, such as lo, is one), 2 on bad usage.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/netperfkit/netperfkit/ethtool"
	"github.com/netperfkit/netperfkit/ethtool/ethtoolprom"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

type options struct {
	iface  string
	file   string
	before string
	after  string
	watch  time.Duration
	count  int
	queues bool
	prom   bool
	json   bool
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("enastat", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.iface, "i", "", "read the live statistics of `interface`")
	fs.StringVar(&o.file, "f", "", "parse saved `ethtool -S` text (or a -json snapshot) from `file`; - is stdin")
	fs.StringVar(&o.before, "before", "", "saved snapshot `file` from the start of a window (with -after)")
	fs.StringVar(&o.after, "after", "", "saved snapshot `file` from the end of a window (with -before)")
	fs.DurationVar(&o.watch, "watch", 0, "with -i: print what changed every `interval`")
	fs.IntVar(&o.count, "n", 0, "with -watch: stop after `count` intervals (0: until interrupted)")
	fs.BoolVar(&o.queues, "queues", false, "print per-queue statistics with totals")
	fs.BoolVar(&o.prom, "prom", false, "print Prometheus text with node_exporter's ethtool metric names")
	fs.BoolVar(&o.json, "json", false, "print JSON")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	countSet := false
	fs.Visit(func(f *flag.Flag) { countSet = countSet || f.Name == "n" })
	switch {
	case fs.NArg() > 0:
		return o, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	case (o.before == "") != (o.after == ""):
		return o, errors.New("-before and -after go together")
	case o.before != "" && (o.file != "" || o.watch > 0 || o.prom || o.queues):
		return o, errors.New("-before/-after exclude -f, -watch, -prom and -queues")
	case o.iface == "" && o.file == "" && o.before == "":
		return o, errors.New("give -i IFACE, -f FILE or -before FILE -after FILE")
	case o.watch < 0 || o.count < 0:
		return o, errors.New("-watch and -n must not be negative")
	case o.watch > 0 && o.file != "":
		return o, errors.New("-watch needs a live interface (-i), not -f")
	case o.watch > 0 && (o.prom || o.queues):
		return o, errors.New("-watch excludes -prom and -queues")
	case countSet && o.watch == 0:
		return o, errors.New("-n needs -watch")
	case o.prom && o.json:
		return o, errors.New("-prom and -json exclude each other")
	}
	return o, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, "enastat:", err)
		}
		return 2
	}
	if err := do(ctx, o, stdout); err != nil {
		fmt.Fprintln(stderr, "enastat:", err)
		return 1
	}
	return 0
}

func do(ctx context.Context, o options, w io.Writer) error {
	if o.before != "" {
		return window(o, w)
	}
	if o.file != "" {
		// With -f, -i only names the interface the text came from.
		s, err := readFile(o.file)
		if err != nil {
			return err
		}
		if o.iface != "" {
			s.Interface = o.iface
		}
		return printSnapshot(w, s, o)
	}
	c, err := ethtool.New()
	if err != nil {
		return err
	}
	defer c.Close()
	if o.watch > 0 {
		return watch(ctx, c, o, w)
	}
	s, err := c.Snapshot(o.iface)
	if err != nil {
		return err
	}
	return printSnapshot(w, s, o)
}

func readFile(name string) (*ethtool.Snapshot, error) {
	var r io.Reader = os.Stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	s, err := ethtool.ParseSnapshot(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return s, nil
}

func printSnapshot(w io.Writer, s *ethtool.Snapshot, o options) error {
	switch {
	case o.prom:
		return ethtoolprom.Write(w, s)
	case o.json && o.queues:
		return writeJSON(w, struct {
			Interface string              `json:"interface"`
			Driver    string              `json:"driver"`
			Queues    ethtool.QueueGroups `json:"queues"`
		}{s.Interface, s.Driver, ethtool.GroupQueues(s.Stats)})
	case o.json:
		return writeJSON(w, s)
	}
	name := s.Interface
	if name == "" {
		name = "(saved)"
	}
	fmt.Fprintf(w, "NIC statistics of %s", name)
	if s.Driver != "" {
		fmt.Fprintf(w, " (driver %s %s)", s.Driver, s.DriverVersion)
	}
	fmt.Fprintln(w, ":")
	if o.queues {
		printQueues(w, ethtool.GroupQueues(s.Stats))
	} else {
		for _, st := range s.Stats {
			fmt.Fprintf(w, "     %s: %d\n", st.Name, st.Value)
		}
	}
	if isENA(s.Stats) {
		printENA(w, s.Stats)
	}
	return nil
}

func printQueues(w io.Writer, g ethtool.QueueGroups) {
	for _, st := range g.Other {
		fmt.Fprintf(w, "     %s: %d\n", st.Name, st.Value)
	}
	for _, q := range g.Queues {
		fmt.Fprintf(w, "  queue %d %s:", q.Index, q.Kind)
		printNonZero(w, q.Stats)
	}
	for _, t := range g.Totals {
		fmt.Fprintf(w, "  total %s (%d queues):", t.Kind, t.Queues)
		printNonZero(w, t.Stats)
	}
}

// printNonZero ends a line with the statistics that are not zero, as name=value.
func printNonZero(w io.Writer, stats ethtool.Stats) {
	for _, st := range stats {
		if st.Value != 0 {
			fmt.Fprintf(w, " %s=%d", st.Name, st.Value)
		}
	}
	fmt.Fprintln(w)
}

// isENA reports whether stats have one of ENA's distinctive groups: the
// allowance counters, both SRD packet counters, or admin queue counters.
func isENA(stats ethtool.Stats) bool {
	if _, ok := stats.Allowance(); ok {
		return true
	}
	if hasSRD(stats) {
		return true
	}
	for _, st := range stats {
		if strings.HasPrefix(st.Name, "ena_admin_q_") {
			return true
		}
	}
	return false
}

// hasSRD reports whether stats have both SRD packet counters: without the
// eligible one, coverage would read as no eligible traffic.
func hasSRD(stats ethtool.Stats) bool {
	_, tx := stats.Get("ena_srd_tx_pkts")
	_, eligible := stats.Get("ena_srd_eligible_tx_pkts")
	return tx && eligible
}

func printENA(w io.Writer, stats ethtool.Stats) {
	fmt.Fprintln(w, "ENA:")
	if a, ok := stats.Allowance(); ok {
		fmt.Fprintf(w, "  allowance exceeded: bw_in %d, bw_out %d, pps %d, conntrack %d, linklocal %d\n",
			a.BWInExceeded, a.BWOutExceeded, a.PPSExceeded, a.ConntrackExceeded, a.LinklocalExceeded)
		if a.ConntrackAvailable != nil {
			fmt.Fprintf(w, "  conntrack allowance available: %d\n", *a.ConntrackAvailable)
		}
	} else {
		fmt.Fprintln(w, "  no allowance counters (driver older than 2.2 or device without ENI statistics)")
	}
	get := func(name string) uint64 { v, _ := stats.Get(name); return v }
	if hasSRD(stats) {
		fmt.Fprintf(w, "  ENA Express: ena_srd_mode %d, tx %d, eligible tx %d, rx %d, resources %d%% used\n",
			get("ena_srd_mode"), get("ena_srd_tx_pkts"), get("ena_srd_eligible_tx_pkts"), get("ena_srd_rx_pkts"), get("ena_srd_resource_utilization"))
	} else {
		fmt.Fprintln(w, "  no ENA Express (SRD) statistics")
	}
	fmt.Fprintf(w, "  resets %d (failed %d), tx timeouts %d, watchdog expiries %d\n",
		get("total_resets"), get("reset_fail"), get("tx_timeout"), get("wd_expired"))
}

func watch(ctx context.Context, c *ethtool.Client, o options, w io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	n := 0
	var werr error
	err := c.Watch(ctx, o.iface, &ethtool.WatchConfig{Interval: o.watch, OnDelta: func(d ethtool.Delta) {
		n++
		if o.json {
			werr = writeJSON(w, &d)
		} else {
			werr = printDelta(w, &d)
		}
		if werr != nil || (o.count > 0 && n >= o.count) {
			cancel()
		}
	}})
	if werr != nil {
		return werr
	}
	if errors.Is(err, context.Canceled) {
		return nil // -count reached, or Ctrl-C
	}
	return err
}

func printDelta(w io.Writer, d *ethtool.Delta) error {
	changed := d.Changed()
	sort.SliceStable(changed, func(i, j int) bool { return changed[i].Increase > changed[j].Increase })
	_, err := fmt.Fprintf(w, "%s %s over %.3fs: %d counters changed\n", d.To.Format("15:04:05.000"), d.Interface, d.Duration.Seconds(), len(changed))
	for _, c := range changed {
		switch {
		case c.Reset:
			fmt.Fprintf(w, "  %-32s reset (%d -> %d)\n", c.Name, c.Before, c.After)
		case c.Gauge:
			fmt.Fprintf(w, "  %-32s %d -> %d\n", c.Name, c.Before, c.After)
		default:
			fmt.Fprintf(w, "  %-32s +%d (%.1f/s)\n", c.Name, c.Increase, c.PerSecond)
		}
	}
	for _, f := range ethtool.Explain(d) {
		fmt.Fprintf(w, "  ! %s\n", f)
	}
	if a, ok := d.Allowance(); ok {
		fmt.Fprintf(w, "  limited by: %s\n", limitedByText(a.Exceeded()))
		if len(a.Reset) > 0 {
			fmt.Fprintf(w, "  allowance counters restarted, or may have after a driver reset, in the window, so their deltas are lower bounds: %s\n", lowerBounds(a))
		}
	}
	return err
}

// lowerBounds lists the restarted allowance counters with the packets they
// counted since the restart, "pps_allowance_exceeded at least +300".
func lowerBounds(a ethtool.Allowance) string {
	var out []string
	for i, v := range []uint64{a.BWInExceeded, a.BWOutExceeded, a.PPSExceeded, a.ConntrackExceeded, a.LinklocalExceeded} {
		if name := ethtool.AllowanceCounters()[i]; slices.Contains(a.Reset, name) {
			out = append(out, fmt.Sprintf("%s at least +%d", name, v))
		}
	}
	return strings.Join(out, ", ")
}

func limitedByText(names []string) string {
	if len(names) == 0 {
		return "-"
	}
	return strings.Join(names, ", ")
}

// windowJSON is what -before/-after -json prints.
type windowJSON struct {
	Interface string  `json:"interface"`
	Seconds   float64 `json:"seconds"`
	*ethtool.Allowance
	// AllowanceNote says why there are no allowance deltas.
	AllowanceNote string         `json:"allowance_note,omitempty"`
	LimitedBy     []string       `json:"limited_by"`
	Delta         *ethtool.Delta `json:"delta"`
}

// window compares two saved snapshots.
func window(o options, w io.Writer) error {
	before, err := readFile(o.before)
	if err != nil {
		return err
	}
	after, err := readFile(o.after)
	if err != nil {
		return err
	}
	if o.iface != "" {
		before.Interface, after.Interface = o.iface, o.iface
	}
	d, err := ethtool.Diff(before, after)
	if err != nil {
		return err
	}
	if !o.json {
		if err := printDelta(w, d); err != nil {
			return err
		}
		if _, ok := d.Allowance(); !ok {
			fmt.Fprintln(w, "  limited by: - (no allowance counters: not an ENA interface, or an ENA driver older than 2.2.10)")
		}
		return nil
	}
	out := windowJSON{Interface: d.Interface, Seconds: d.Duration.Seconds(), LimitedBy: []string{}, Delta: d}
	if a, ok := d.Allowance(); ok {
		out.Allowance, out.LimitedBy = &a, a.Exceeded()
	} else {
		out.AllowanceNote = "no allowance counters: not an ENA interface, or an ENA driver older than 2.2.10"
	}
	return writeJSON(w, out)
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	return enc.Encode(v)
}
