// Command srdcheck proves whether ENA Express (SRD) carried an interface's
// traffic, from two snapshots of its ENA statistics, and checks the host's
// settings for ENA Express. It is built only on the public API of
// github.com/netperfkit/netperfkit/ethtool and .../srd.
//
//	srdcheck -i eth0 -window 30s             # snapshot, wait, snapshot, verdict
//	srdcheck -before a.txt -after b.txt      # saved `ethtool -S` text or enastat -json
//	srdcheck -readiness -i eth0 [-high-rtt]  # host settings only, like check-ena-express-settings.sh
//	srdcheck -i eth0 -window 10s -readiness -json  # a 10 s window and the host settings
//	srdcheck -i eth0 -eni enis.json          # also compare with `aws ec2 describe-network-interfaces`
//
// -readiness alone checks only the host; it takes the window as well when
// -window, -eni or -before/-after is given.
//
// With -json it prints one object with srd_mode, express_enabled,
// udp_enabled, tx_pkts_delta, eligible_tx_pkts_delta, rx_pkts_delta,
// fallback_pkts, coverage, verdict and reason, the allowance counters'
// deltas under their names (bw_in_allowance_exceeded ...
// conntrack_allowance_available) and limited_by, the allowances that were
// hit (srd.NewWindow: the verdict enastat -before/-after gives too); and
// readiness, readiness_status with -readiness, spec_check with -eni. Exit status: 0 when SRD carried the
// traffic and no check failed, 3 when the verdict is anything else or a check
// failed, 1 on errors, 2 on bad usage.
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
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/netperfkit/netperfkit/ethtool"
	"github.com/netperfkit/netperfkit/srd"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

type options struct {
	iface         string
	window        time.Duration
	before, after string
	readiness     bool
	highRTT       bool
	root          string
	eni           string
	mac           string
	json          bool
	// windowSet is set when -window was given, even at its default.
	windowSet bool
}

// coverage reports whether the options ask for a coverage window: always
// without -readiness, and with it when a window was asked for explicitly
// (-window, saved snapshots) or -eni needs the window's ena_srd_mode.
func (o options) coverage() bool {
	return !o.readiness || o.windowSet || o.before != "" || o.eni != ""
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("srdcheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.iface, "i", "", "`interface` to snapshot (and to check with -readiness)")
	fs.DurationVar(&o.window, "window", 10*time.Second, "with -i: time between the two snapshots (given with -readiness, the window is taken too)")
	fs.StringVar(&o.before, "before", "", "saved snapshot `file` from the start of the window (ethtool -S text or enastat -json)")
	fs.StringVar(&o.after, "after", "", "saved snapshot `file` from the end of the window")
	fs.BoolVar(&o.readiness, "readiness", false, "check the host's settings for ENA Express (needs -i); alone, without a coverage window")
	fs.BoolVar(&o.highRTT, "high-rtt", false, "with -readiness: use the high-RTT (cross-AZ) thresholds")
	fs.StringVar(&o.root, "root", "/", "with -readiness: read /proc and /sys under `dir`")
	fs.StringVar(&o.eni, "eni", "", "`file` with the JSON of `aws ec2 describe-network-interfaces`: check its EnaSrdSpecification against ena_srd_mode")
	fs.StringVar(&o.mac, "mac", "", "with -eni: the interface's MAC `address` (default: read from /sys/class/net/IFACE/address under -root)")
	fs.BoolVar(&o.json, "json", false, "print JSON")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "window" {
			o.windowSet = true
		}
	})
	files := o.before != "" || o.after != ""
	switch {
	case fs.NArg() > 0:
		return o, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	case files && (o.before == "" || o.after == ""):
		return o, errors.New("-before and -after go together")
	case !files && o.iface == "":
		return o, errors.New("give -i IFACE, or -before FILE -after FILE")
	case o.window <= 0:
		return o, errors.New("-window must be positive")
	case o.eni != "" && o.iface == "" && o.mac == "":
		return o, errors.New("-eni needs -i IFACE or -mac ADDRESS to find the ENI")
	}
	return o, nil
}

// output is what -json prints: the coverage report's fields at the top
// level, and the readiness checks when asked for.
type output struct {
	*srd.Window
	checks
}

// checks are output's fields beside the window's.
type checks struct {
	Readiness       []srd.Check `json:"readiness,omitempty"`
	ReadinessStatus srd.Status  `json:"readiness_status,omitempty"`
	SpecCheck       *srd.Check  `json:"spec_check,omitempty"`
}

// MarshalJSON puts the window's fields and the checks side by side in one
// object (srd.Window marshals itself, which would hide the checks).
func (o output) MarshalJSON() ([]byte, error) {
	rest, err := json.Marshal(o.checks)
	if err != nil || o.Window == nil {
		return rest, err
	}
	win, err := json.Marshal(o.Window)
	if err != nil {
		return nil, err
	}
	if len(rest) <= 2 {
		return win, nil
	}
	return append(append(win[:len(win)-1:len(win)-1], ','), rest[1:]...), nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, "srdcheck:", err)
		}
		return 2
	}
	var out output
	// Readiness first: its errors need not wait for the window.
	if o.readiness {
		if o.iface == "" {
			fmt.Fprintln(stderr, "srdcheck: -readiness needs -i IFACE")
			return 2
		}
		checks, err := srd.Readiness(o.iface, &srd.ReadinessConfig{Root: o.root, HighRTT: o.highRTT})
		if err != nil {
			fmt.Fprintln(stderr, "srdcheck:", err)
			return 1
		}
		out.Readiness, out.ReadinessStatus = checks, worst(checks)
	}
	if o.coverage() {
		before, after, err := snapshots(ctx, o)
		if err != nil {
			fmt.Fprintln(stderr, "srdcheck:", err)
			return 1
		}
		w := srd.NewWindow(before, after)
		out.Window = &w
	}
	if o.eni != "" && out.Window != nil {
		c, err := specCheck(o, &out.CoverageReport)
		if err != nil {
			fmt.Fprintln(stderr, "srdcheck:", err)
			return 1
		}
		out.SpecCheck = &c
	}
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			fmt.Fprintln(stderr, "srdcheck:", err)
			return 1
		}
	} else {
		printText(stdout, out)
	}
	if (out.Window != nil && out.Verdict != srd.VerdictCarried) || out.ReadinessStatus == srd.StatusFail ||
		(out.SpecCheck != nil && out.SpecCheck.Status == srd.StatusFail) {
		return 3
	}
	return 0
}

// worst is the worst status among checks: fail over warn over pass.
func worst(checks []srd.Check) srd.Status {
	w := srd.StatusPass
	for _, c := range checks {
		switch c.Status {
		case srd.StatusFail:
			return srd.StatusFail
		case srd.StatusWarn:
			w = srd.StatusWarn
		}
	}
	return w
}

func snapshots(ctx context.Context, o options) (*ethtool.Snapshot, *ethtool.Snapshot, error) {
	if o.before != "" {
		b, err := readFile(o.before)
		if err != nil {
			return nil, nil, err
		}
		a, err := readFile(o.after)
		if err != nil {
			return nil, nil, err
		}
		if o.iface != "" {
			b.Interface, a.Interface = o.iface, o.iface
		}
		return b, a, nil
	}
	c, err := ethtool.New()
	if err != nil {
		return nil, nil, err
	}
	defer c.Close()
	b, err := c.Snapshot(o.iface)
	if err != nil {
		return nil, nil, err
	}
	t := time.NewTimer(o.window)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return nil, nil, fmt.Errorf("interrupted before the window ended: %w", ctx.Err())
	case <-t.C:
	}
	a, err := c.Snapshot(o.iface)
	if err != nil {
		return nil, nil, err
	}
	return b, a, nil
}

// specCheck finds the interface's ENI in the -eni file by MAC address and
// compares its EnaSrdSpecification with the driver's ena_srd_mode.
func specCheck(o options, r *srd.CoverageReport) (srd.Check, error) {
	f, err := os.Open(o.eni)
	if err != nil {
		return srd.Check{}, err
	}
	defer f.Close()
	nis, err := srd.ParseNetworkInterfaces(f)
	if err != nil {
		return srd.Check{}, fmt.Errorf("%s: %w", o.eni, err)
	}
	mac := o.mac
	if mac == "" {
		b, err := os.ReadFile(filepath.Join(o.root, "sys", "class", "net", o.iface, "address"))
		if err != nil {
			return srd.Check{}, fmt.Errorf("MAC address of %s (give -mac): %w", o.iface, err)
		}
		mac = string(b)
	}
	return srd.SpecCheck(nis, mac, *r), nil
}

func readFile(name string) (*ethtool.Snapshot, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s, err := ethtool.ParseSnapshot(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return s, nil
}

func printText(w io.Writer, out output) {
	if r := out.Window; r != nil {
		name := r.Interface
		if name == "" {
			name = "(saved snapshots)"
		}
		fmt.Fprintf(w, "interface      %s\n", name)
		if r.Duration > 0 {
			fmt.Fprintf(w, "window         %.3f s\n", r.Duration.Seconds())
		}
		if r.Verdict != srd.VerdictNoStatistics {
			fmt.Fprintf(w, "ena_srd_mode   %d (%s)\n", uint64(r.Mode), r.Mode)
			fmt.Fprintf(w, "srd tx         +%d\n", r.TxPktsDelta)
			fmt.Fprintf(w, "eligible tx    +%d\n", r.EligibleTxPktsDelta)
			fmt.Fprintf(w, "srd rx         +%d\n", r.RxPktsDelta)
			fmt.Fprintf(w, "coverage       %.6f (fallback %d packets)\n", r.Coverage, r.FallbackPkts)
			fmt.Fprintf(w, "srd resources  %d%% -> %d%% used\n", r.ResourceUtilizationBeforePercent, r.ResourceUtilizationPercent)
		}
		fmt.Fprintf(w, "verdict        %s: %s\n", r.Verdict, r.Reason)
		printAllowance(w, r)
	}
	if len(out.Readiness) > 0 {
		fmt.Fprintln(w, "readiness:")
		for _, c := range out.Readiness {
			req := "recommended"
			if c.Required {
				req = "required"
			}
			fmt.Fprintf(w, "  %-4s %-34s %-28s want %s (%s)", c.Status, c.Name, c.Value, c.Expect, req)
			if c.Detail != "" && c.Status != srd.StatusPass {
				fmt.Fprintf(w, ": %s", c.Detail)
			}
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "readiness      %s\n", out.ReadinessStatus)
	}
	if c := out.SpecCheck; c != nil {
		fmt.Fprintf(w, "ec2 spec       %s: driver %s, want %s", c.Status, c.Value, c.Expect)
		if c.Detail != "" {
			fmt.Fprintf(w, ": %s", c.Detail)
		}
		fmt.Fprintln(w)
	}
}

// printAllowance prints the allowance counters' deltas and the allowances
// that limited the window, or why there are none.
func printAllowance(w io.Writer, r *srd.Window) {
	a := r.Allowance
	if a == nil {
		fmt.Fprintln(w, "allowances     -: no *_allowance_exceeded statistics: not an ENA interface, or an ENA driver older than 2.2.10")
		return
	}
	names := ethtool.AllowanceCounters()
	cells := make([]string, len(names))
	for i, v := range []uint64{a.BWInExceeded, a.BWOutExceeded, a.PPSExceeded, a.ConntrackExceeded, a.LinklocalExceeded} {
		name := names[i]
		at := ""
		if slices.Contains(a.Reset, name) {
			at = "at least "
		}
		cells[i] = fmt.Sprintf("%s %s+%d", strings.TrimSuffix(name, "_allowance_exceeded"), at, v)
	}
	fmt.Fprintf(w, "allowances     %s\n", strings.Join(cells, ", "))
	if len(a.Reset) > 0 {
		fmt.Fprintf(w, "restarted      %s (or may have, after a driver reset): their deltas are lower bounds\n", strings.Join(a.Reset, ", "))
	}
	if a.ConntrackAvailable != nil {
		fmt.Fprintf(w, "conntrack room %d\n", *a.ConntrackAvailable)
	}
	fmt.Fprintf(w, "limited by     %s\n", r.LimitedByText())
}
