package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"github.com/netperfkit/netperfkit/ethtool"
)

// defaultRouteIface returns the interface of the IPv4 default route from
// /proc/net/route's text.
func defaultRouteIface(r io.Reader) string {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) > 2 && f[1] == "00000000" {
			return f[0]
		}
	}
	return ""
}

// counterAgreement compares a live snapshot with `ethtool -S` read just
// before and just after it: the same names, and each of our values within
// [before, after] (a counter only grows; a value outside the bracket is a
// decoding error, not timing).
func counterAgreement(before, ours, after ethtool.Stats) *Agreement {
	ag := &Agreement{What: "counters of one interface: ours within ethtool -S before and after"}
	seen := map[string]bool{}
	note := func(s string) {
		if len(ag.Detail) < 10 {
			ag.Detail = append(ag.Detail, s)
		}
	}
	for _, s := range ours {
		seen[s.Name] = true
		ag.Compared++
		lo, ok1 := before.Get(s.Name)
		hi, ok2 := after.Get(s.Name)
		switch {
		case !ok1 || !ok2:
			note("only ours: " + s.Name)
		case s.Value < min(lo, hi) || s.Value > max(lo, hi):
			note(fmt.Sprintf("%s: ours %d outside ethtool's %d..%d", s.Name, s.Value, lo, hi))
		default:
			ag.Agree++
		}
	}
	for _, s := range before {
		if !seen[s.Name] {
			seen[s.Name] = true
			ag.Compared++
			note("only ethtool -S: " + s.Name)
		}
	}
	return ag
}

func ethtoolText(ctx context.Context, bin, iface string) (ethtool.Stats, error) {
	out, err := exec.CommandContext(ctx, bin, "-S", iface).Output()
	if err != nil {
		return nil, fmt.Errorf("anchors: ethtool -S %s: %w", iface, err)
	}
	s, err := ethtool.ParseSnapshot(bytes.NewReader(out))
	if err != nil {
		return nil, fmt.Errorf("anchors: ethtool -S %s: %w", iface, err)
	}
	return s.Stats, nil
}

// ethtoolAgreement reads iface's counters live and with `ethtool -S`.
func ethtoolAgreement(ctx context.Context, bin, iface string) (*Agreement, error) {
	c, err := ethtool.New()
	if err != nil {
		return nil, fmt.Errorf("anchors: %w", err)
	}
	defer c.Close()
	before, err := ethtoolText(ctx, bin, iface)
	if err != nil {
		return nil, err
	}
	snap, err := c.Snapshot(iface)
	if err != nil {
		return nil, fmt.Errorf("anchors: snapshot of %s: %w", iface, err)
	}
	after, err := ethtoolText(ctx, bin, iface)
	if err != nil {
		return nil, err
	}
	ag := counterAgreement(before, snap.Stats, after)
	ag.What += " (" + iface + ", driver " + snap.Driver + ")"
	return ag, nil
}

// runEthtool checks the counters' agreement on the default route's
// interface, then runs ethtool's veth benchmark for the speed ratio.
func runEthtool(ctx context.Context, e *env) (*outcome, error) {
	bin, err := needBinary("ethtool")
	if err != nil {
		return nil, err
	}
	f, err := os.Open("/proc/net/route")
	if err != nil {
		return nil, skip("no /proc/net/route: %v", err)
	}
	iface := defaultRouteIface(f)
	f.Close()
	if iface == "" {
		return nil, skip("no IPv4 default route, so no interface to read")
	}
	o := &outcome{commands: []string{"ethtool -S " + iface + " (before and after) vs ethtool.Client.Snapshot(" + strconv.Quote(iface) + ")"}}
	if o.agreement, err = ethtoolAgreement(ctx, bin, iface); err != nil {
		return nil, err
	}
	if e.agreeOnly {
		return o, nil
	}
	out, cmd, err := e.run(ctx, nil, "go", "test", "-run", "^$", "-bench", "VethSnapshot/(ioctl|ethtool-binary)$",
		"-benchtime", e.secs(2, 1)+"s", "-count", strconv.Itoa(e.rounds), "./ethtool/")
	o.commands = append(o.commands, cmd)
	o.rounds = parseEthtoolBench(out)
	if len(o.rounds) == 0 && err != nil {
		fmt.Fprintf(e.log, "anchors: ethtool: the speed half did not run: %v\n", err)
	}
	return o, nil
}
