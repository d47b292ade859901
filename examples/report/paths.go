package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/netperfkit/netperfkit/ethtool"
	"github.com/netperfkit/netperfkit/latency"
	"github.com/netperfkit/netperfkit/srd/srdexperiment"
)

// PathsSection is E1: srdexperiment.Run's table, plus why the interface has
// no SRD counters when it has none.
type PathsSection struct {
	*srdexperiment.Result
	// RTTMode is the ping-pong receive path: "spin" or "poll" (-rtt-mode).
	RTTMode string `json:"rtt_mode"`
	// SingleFlowLimits holds each path's single-flow reference (-paths
	// name=host@limit), by path name.
	SingleFlowLimits map[string]float64 `json:"single_flow_limit_bits_per_second,omitempty"`
	// CountersNote says why no NIC counter deltas are shown, when so.
	CountersNote string `json:"counters_note,omitempty"`
	// RTTLoad is -rtt-load: "on" when each path's RTT was measured again
	// under its N-stream flow (Loaded), "off" when not ("" in reports
	// written before it existed).
	RTTLoad string `json:"rtt_load,omitempty"`
	// Loaded holds each path's RTT under load, in the targets' order.
	Loaded []LoadedRTT `json:"loaded_rtt,omitempty"`
	// KernelRTT holds each path's kernel-to-kernel RTT by path name
	// (latency.PingPongResult.KernelRTT), NoKernelStamps why a path has
	// none (kview.go).
	KernelRTT      map[string]*latency.Summary `json:"kernel_rtt,omitempty"`
	NoKernelStamps map[string]string           `json:"no_kernel_stamps,omitempty"`

	rttHists    map[string]*hdrhistogram.Histogram
	loadedHists map[string]*hdrhistogram.Histogram
}

// rttModeText says what the RTT mode means for the numbers.
func rttModeText(m string) string {
	if m == "spin" {
		return "spin (busy-polls a core, as sockperf does)"
	}
	return "poll (Go's netpoller: about 10% above sockperf at p50; -rtt-mode spin is closer)"
}

// defaultRTTMode is spin where it exists and a core can be spared.
func defaultRTTMode() string {
	if runtime.GOOS == "linux" && runtime.NumCPU() >= 2 {
		return "spin"
	}
	return "poll"
}

// pathTargets turns -paths into experiment targets and their single-flow
// limits, or names the in-process servers when it is empty.
func pathTargets(o *options, srv *servers) ([]srdexperiment.Target, map[string]float64, error) {
	if o.paths == "" {
		return []srdexperiment.Target{{Name: "loopback", ThroughputAddr: srv.throughputAddr, PingPongAddr: srv.pingAddr}}, nil, nil
	}
	var ts []srdexperiment.Target
	limits := map[string]float64{}
	for _, f := range splitList(o.paths) {
		name, host, ok := strings.Cut(f, "=")
		if !ok || name == "" || host == "" {
			return nil, nil, fmt.Errorf("-paths: %q is not name=host[@limit]", f)
		}
		if h, lim, ok := strings.Cut(host, "@"); ok {
			v, err := parseRate(lim)
			if err != nil || v == 0 {
				return nil, nil, fmt.Errorf("-paths: %s: limit %q: want a rate such as 5G", name, lim)
			}
			host, limits[name] = h, v
		}
		host = strings.Trim(host, "[]")
		ts = append(ts, srdexperiment.Target{
			Name:           name,
			ThroughputAddr: net.JoinHostPort(host, strconv.Itoa(o.tport)),
			PingPongAddr:   net.JoinHostPort(host, strconv.Itoa(o.lport)),
		})
	}
	if len(limits) == 0 {
		limits = nil
	}
	return ts, limits, nil
}

func runPaths(ctx context.Context, targets []srdexperiment.Target, limits map[string]float64, o *options, prog *progress) (*PathsSection, error) {
	sec := &PathsSection{rttHists: map[string]*hdrhistogram.Histogram{}, loadedHists: map[string]*hdrhistogram.Histogram{},
		RTTMode: o.rttMode, SingleFlowLimits: limits, RTTLoad: o.rttLoad}
	var spin time.Duration // the default receive path
	if o.rttMode == "spin" {
		spin = time.Millisecond
	}
	iface := o.iface
	if iface == "" && allLoopback(targets) {
		// Loopback traffic never reaches a NIC: the default-route NIC's
		// counters would only credit unrelated traffic to the test.
		sec.CountersNote = loopbackCountersNote
	} else if iface == "" {
		var err error
		if iface, err = defaultRouteInterface(); err != nil {
			sec.CountersNote = "no NIC counters: " + err.Error()
		}
	}
	if iface != "" && o.snapshot == nil {
		if _, err := ethtool.ReadSnapshot(iface); err != nil {
			switch {
			case errors.Is(err, ethtool.ErrNoStats):
				sec.CountersNote = iface + " has no NIC statistics"
			case errors.Is(err, errors.ErrUnsupported):
				sec.CountersNote = "no NIC counters: reading them is not supported on " + runtime.GOOS
			default:
				sec.CountersNote = "no NIC counters: " + err.Error()
			}
			iface = ""
		}
	}

	// srdexperiment.Run calls OnPhase and RTT from its own goroutine, one
	// after the other: current and rttHists need no lock.
	current := ""
	cfg := &srdexperiment.Config{
		Interface:           iface,
		SingleFlowDuration:  o.d,
		MultiStreamDuration: o.d,
		Streams:             o.streams,
		RTTDuration:         o.rttD,
		OnPhase: func(target, phase string) {
			current = target
			d := o.d
			if phase == "rtt" {
				d = o.rttD
			}
			prog.Start("E1 paths: "+target+" "+phase, d)
		},
		// The RTT run keeps its histogram for the percentile-spectrum plot.
		RTT: func(ctx context.Context, addr string, d time.Duration) (latency.Summary, error) {
			res, err := latency.PingPong(ctx, addr, &latency.PingPongConfig{Duration: d, Spin: spin, KernelStamps: true})
			if res == nil {
				return latency.Summary{}, err
			}
			sec.keepKernel(current, res)
			sec.rttHists[current] = res.Recorder.Snapshot()
			return res.Summary, err
		},
		Snapshot: snapshotSource(o),
	}
	res, err := srdexperiment.Run(ctx, targets, cfg)
	sec.Result = res
	if err != nil {
		if res == nil {
			return nil, fmt.Errorf("paths: %w", err)
		}
		return sec, fmt.Errorf("paths: %w", err)
	}
	if o.rttLoad == "on" {
		lr := loadedRun{iface: iface, spin: spin, inProcess: o.paths == "", snapshot: cfg.Snapshot}
		if err := runLoaded(ctx, sec, o, lr, prog); err != nil {
			return sec, fmt.Errorf("paths: %w", err)
		}
	}
	return sec, nil
}

// loopbackCountersNote is E1's counters note when every target is on
// loopback and no -iface was named.
const loopbackCountersNote = "loopback targets: NIC counters not relevant"

// allLoopback reports whether every target's addresses are loopback
// addresses (the in-process servers, 127.0.0.0/8, ::1 or localhost).
func allLoopback(targets []srdexperiment.Target) bool {
	for _, t := range targets {
		for _, addr := range []string{t.ThroughputAddr, t.PingPongAddr} {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				return false
			}
			if strings.EqualFold(host, "localhost") {
				continue
			}
			ip, err := netip.ParseAddr(host)
			if err != nil || !ip.Unmap().IsLoopback() {
				return false
			}
		}
	}
	return len(targets) > 0
}

// snapshotSource is where E1 reads its counter snapshots.
func snapshotSource(o *options) func(string) (*ethtool.Snapshot, error) {
	if o.snapshot != nil {
		return o.snapshot
	}
	return ethtool.ReadSnapshot
}

func writePathsText(w io.Writer, sec *PathsSection) error {
	fmt.Fprint(w, "E1 paths: throughput, UDP ping-pong RTT and SRD counters")
	if sec.Result != nil && sec.Interface != "" {
		fmt.Fprintf(w, " of %s", sec.Interface)
	}
	fmt.Fprintf(w, "; RTT mode %s\n", rttModeText(sec.RTTMode))
	if sec.Result == nil {
		fmt.Fprintln(w, "  no path finished")
		return nil
	}
	streams := 0
	for _, t := range sec.Targets {
		streams = max(streams, t.Streams)
	}
	if err := writeKernelRTT(w, sec); err != nil {
		return err
	}
	tb := newTable(w, "path", "1 flow (Gbit/s)", "1 flow % of limit", fmt.Sprintf("%d streams (Gbit/s)", streams), "RTT p50 (us)", "RTT p99 (us)", "RTT p99.9 (us)", "SRD tx", "SRD eligible", "coverage (%)", "ena_srd_mode")
	var notes []string
	for _, t := range sec.Targets {
		tx, el, mode := "-", "-", "-"
		if t.SRD.HasSRD() {
			tx, el = fmt.Sprintf("+%d", t.SRD.TxPktsDelta), fmt.Sprintf("+%d", t.SRD.EligibleTxPktsDelta)
			mode = fmt.Sprintf("%d (%s)", uint64(t.SRD.Mode), t.SRD.Mode)
		}
		ofLimit := "-"
		if lim := sec.SingleFlowLimits[t.Name]; lim > 0 {
			ofLimit = fmt.Sprintf("%s of %s", pct(100*t.SingleFlowBitsPerSecond/lim), formatRate(lim))
		}
		tb.row(t.Name, gbit(t.SingleFlowBitsPerSecond), ofLimit, gbit(t.MultiStreamBitsPerSecond),
			us(float64(t.RTT.P50)/1e3), us(float64(t.RTT.P99)/1e3), us(float64(t.RTT.P999)/1e3), tx, el, t.SRD.Percent(), mode)
		if t.Error != "" {
			notes = append(notes, fmt.Sprintf("%s: error: %s", t.Name, t.Error))
		}
		if sec.CountersNote == "" && t.SRD.HasSRD() && t.SRD.Reason != "" {
			notes = append(notes, fmt.Sprintf("%s: %s: %s", t.Name, t.SRD.Verdict, t.SRD.Reason))
		}
	}
	if err := tb.flush(); err != nil {
		return err
	}
	for _, n := range notes {
		fmt.Fprintln(w, n)
	}
	if err := writeLoadedText(w, sec); err != nil {
		return err
	}
	if sec.CountersNote != "" {
		// No snapshots were taken: every counter cell is "-" for this one reason.
		fmt.Fprintf(w, "ENA counters: - (%s)\n\n", sec.CountersNote)
		return nil
	}
	fmt.Fprintf(w, "\nE1 ENA counter windows of %s, one per phase\n", sec.Interface)
	if err := sec.WriteWindows(w); err != nil {
		return err
	}
	fmt.Fprintln(w)
	return nil
}

// defaultRouteInterface names the interface of the IPv4 default route, from
// /proc/net/route (linux).
func defaultRouteInterface() (string, error) {
	f, err := os.Open("/proc/net/route")
	if err != nil {
		return "", fmt.Errorf("cannot find the default route's interface (use -iface): %w", err)
	}
	defer f.Close()
	return parseDefaultRoute(f)
}

func parseDefaultRoute(r io.Reader) (string, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		// Iface Destination Gateway Flags ... Mask: the default route has
		// destination and mask 0 and is up (flag 0x1).
		if len(f) < 8 || f[1] != "00000000" || f[7] != "00000000" {
			continue
		}
		flags, err := strconv.ParseUint(f[3], 16, 32)
		if err == nil && flags&1 != 0 {
			return f[0], nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", errors.New("no default route (use -iface)")
}
