//go:build linux

package main

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/internal/pathlab"
	"github.com/netperfkit/netperfkit/throughput"
)

// verdictLab is a path-lab path with netperfkit's server on B; the
// client runs on A.
type verdictLab struct {
	lab  *pathlab.Lab
	addr string
}

// newVerdictLab builds the path (shaped by sh on both ends when not nil)
// and serves throughput on B until the test ends.
func newVerdictLab(t *testing.T, sh func() *pathlab.Shaper) *verdictLab {
	t.Helper()
	cfg := &pathlab.Config{}
	if sh != nil {
		cfg.A, cfg.B = sh(), sh()
	}
	lab := pathlab.New(t, cfg)
	if lab == nil || t.Skipped() {
		return nil
	}
	var ln net.Listener
	require.NoError(t, lab.B.Do(func() (err error) {
		ln, err = net.Listen("tcp", netip.AddrPortFrom(lab.B.Addr, 0).String())
		return err
	}))
	srv, err := throughput.NewServer(nil)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = srv.Serve(ctx, ln); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return &verdictLab{lab: lab, addr: ln.Addr().String()}
}

// judge runs cfg from A and returns each direction's row as the report
// judges it against limit (0: none stated), keyed "upload"/"download".
// The server is in this process, so no row has a sender CPU figure.
func (v *verdictLab) judge(t *testing.T, cfg throughput.Config, limit float64) map[string]MatrixRow {
	t.Helper()
	cfg.Duration, cfg.Interval = 1500*time.Millisecond, 500*time.Millisecond
	var res *throughput.Result
	require.NoError(t, v.lab.A.Do(func() (err error) {
		// Run dials on this goroutine: its sockets are A's.
		res, err = throughput.Run(context.Background(), v.addr, &cfg)
		return err
	}))
	rows := map[string]MatrixRow{}
	for _, reverse := range []bool{false, true} {
		sum := res.Upload
		if reverse {
			sum = res.Download
		}
		if sum == nil {
			continue
		}
		row := MatrixRow{Direction: "upload", Protocol: "tcp", Streams: sum.Streams, Retransmits: -1}
		if reverse {
			row.Direction = "download"
		}
		fillRow(&row, res, reverse, true, limit)
		t.Logf("%s %s: %.0f Mbit/s, limited by %q (%s)", t.Name(), row.Direction, row.ReceivedBitsPerSecond/1e6, row.LimitedBy, row.LimitedByDetail)
		require.NotNil(t, row.TCPLimits, "%s: the sender's limits are known (ours on both ends)", row.Direction)
		rows[row.Direction] = row
	}
	return rows
}

// sysctl sets a TCP buffer sysctl in h's namespace only (each namespace
// has its own tcp_rmem and tcp_wmem).
func sysctl(t *testing.T, h *pathlab.Host, kv string) {
	t.Helper()
	h.Run(t, "sysctl", "-q", "-w", kv)
}

// smallWindow caps the receive buffer, and so the window a receiver
// advertises, at 16 KiB: a receiver with a small fixed window. (Neither
// iperf3 3.12 nor 3.21 takes -w on a server, "some option you are trying
// to set is client only", and a client's -w would shrink the sender's
// buffer too.)
const smallWindow = "net.ipv4.tcp_rmem=4096 16384 16384"

// TestVerdictShapedPath: across a 100 Mbit/s tbf each way with a shallow
// queue (a 16 KiB bucket, 2 ms of queue), as a policer on a cloud path
// drops, every direction of an upload, a -R and a --bidir test is held
// back by the network: cwnd-limited, with more than netRetrans of its bytes
// sent again. With the shaped rate stated as the limit, a row within
// 90-110% of it reads the limit instead.
//
// A sender that waits for a CPU leaves its socket idle, and the kernel's
// accounting then rightly reads "sender application": that verdict is the
// machine's when the CPU was starved (pathlab.Starved, docs/testing.md), as
// is "receiver window" when the receiver waited and let its window fill.
// A case runs three times at most until the network holds it back; when
// the last try was starved, such a verdict is logged, and
// what holds on any machine is still asserted: the verdict names the share
// that leads its detail, with every share shown.
func TestVerdictShapedPath(t *testing.T) {
	const rate = 100e6
	v := newVerdictLab(t, func() *pathlab.Shaper {
		return &pathlab.Shaper{Qdisc: pathlab.TBF, Rate: rate, Burst: 16 << 10, Latency: 2 * time.Millisecond}
	})
	if v == nil {
		return
	}
	for _, c := range []struct {
		name string
		cfg  throughput.Config
		dirs []string
	}{
		{"upload", throughput.Config{}, []string{"upload"}},
		{"reverse", throughput.Config{Reverse: true}, []string{"download"}},
		{"bidir", throughput.Config{Bidir: true}, []string{"upload", "download"}},
	} {
		var rows map[string]MatrixRow
		starved := false
		for try := 1; try <= 3; try++ {
			pr := pathlab.StartCPUPressure()
			rows = v.judge(t, c.cfg, rate)
			require.Len(t, rows, len(c.dirs), c.name)
			if heldByNetwork(rows, c.dirs) {
				starved = false
				break
			}
			starved = pr.MachineStarved(t)
			t.Logf("%s try %d: not every direction held back by the network", c.name, try)
		}
		for _, d := range c.dirs {
			r := rows[d]
			assert.Contains(t, r.LimitedByDetail, "cwnd-limited", "%s %s: the fractions are shown", c.name, d)
			by, detail := limitedBy(&r, 0, 2)
			send, recv := sides(d)
			// What a starved end reads: a sender that waited for a CPU
			// left its socket idle; a receiver that did, its window full.
			if lead, ok := map[string]string{"sender application (" + send + ")": "idle", "receiver window (" + recv + ")": "rwnd-limited"}[by]; starved && ok {
				t.Logf("%s %s: %q on a starved CPU: the machine's (%s)", c.name, d, by, detail)
				assert.True(t, strings.HasPrefix(detail, lead), "the verdict leads with its share: %s", detail)
				continue
			}
			assert.Contains(t, []string{"limit", "network"}, r.LimitedBy, "%s %s, the limit stated: %s", c.name, d, r.LimitedByDetail)
			assert.Equal(t, "network", by, "%s %s, no limit stated: %s", c.name, d, detail)
			assert.True(t, strings.HasPrefix(detail, "cwnd-limited"), detail)
		}
	}
}

// heldByNetwork reports whether every direction of rows reads the network
// (or the stated limit) and, with no limit stated, the network.
func heldByNetwork(rows map[string]MatrixRow, dirs []string) bool {
	for _, d := range dirs {
		r := rows[d]
		if by, _ := limitedBy(&r, 0, 2); by != "network" || (r.LimitedBy != "network" && r.LimitedBy != "limit") {
			return false
		}
	}
	return true
}

// TestVerdictReceiverWindow: a receiver whose window is small and fixed
// holds the sender back; the verdict names the receiving side: the server
// for an upload, the client for -R, and with --bidir only the direction
// whose receiver has the small window.
func TestVerdictReceiverWindow(t *testing.T) {
	for _, c := range []struct {
		name   string
		small  func(*pathlab.Lab) *pathlab.Host
		cfg    throughput.Config
		want   map[string]string // direction -> verdict
		notRwd string            // a direction that must not read "receiver window"
	}{
		{"upload into a small-window server", func(l *pathlab.Lab) *pathlab.Host { return l.B }, throughput.Config{},
			map[string]string{"upload": "receiver window (server)"}, ""},
		{"-R into a small-window client", func(l *pathlab.Lab) *pathlab.Host { return l.A }, throughput.Config{Reverse: true},
			map[string]string{"download": "receiver window (client)"}, ""},
		{"--bidir, the server's window small", func(l *pathlab.Lab) *pathlab.Host { return l.B }, throughput.Config{Bidir: true},
			map[string]string{"upload": "receiver window (server)"}, "download"},
		{"--bidir, the client's window small", func(l *pathlab.Lab) *pathlab.Host { return l.A }, throughput.Config{Bidir: true},
			map[string]string{"download": "receiver window (client)"}, "upload"},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := newVerdictLab(t, nil)
			if v == nil {
				return
			}
			sysctl(t, c.small(v.lab), smallWindow)
			rows := v.judge(t, c.cfg, 0)
			for d, want := range c.want {
				assert.Equal(t, want, rows[d].LimitedBy, "%s: %s", d, rows[d].LimitedByDetail)
				assert.True(t, strings.HasPrefix(rows[d].LimitedByDetail, "rwnd-limited"), rows[d].LimitedByDetail)
			}
			if c.notRwd != "" {
				require.Contains(t, rows, c.notRwd)
				assert.NotContains(t, rows[c.notRwd].LimitedBy, "receiver window", "%s: its receiver's window was not small", c.notRwd)
			}
		})
	}
}

// TestVerdictSender: a sender that has too little to send reads "sender":
// a slow application source (a 50 Mbit/s pace on an unshaped path) on
// either side, and a tiny send buffer. On this path an ACK returns faster
// than the sending thread wakes, so a tiny buffer empties between writes
// and the kernel counts that as idle time (the application's) rather than
// as sndbuf-limited time, which needs a buffer smaller than what the path
// holds in flight; either reads "sender".
func TestVerdictSender(t *testing.T) {
	for _, c := range []struct {
		name  string
		cfg   throughput.Config
		wmem  bool
		dir   string
		want  string // the verdict, or its prefix when wmem
		limit float64
	}{
		{"slow source, upload", throughput.Config{Bitrate: 50e6}, false, "upload", "sender application (client)", 0},
		{"slow source, -R", throughput.Config{Bitrate: 50e6, Reverse: true}, false, "download", "sender application (server)", 0},
		{"tiny send buffer, upload", throughput.Config{}, true, "upload", "sender ", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := newVerdictLab(t, nil)
			if v == nil {
				return
			}
			if c.wmem {
				sysctl(t, v.lab.A, "net.ipv4.tcp_wmem=4096 8192 8192")
			}
			rows := v.judge(t, c.cfg, c.limit)
			require.Contains(t, rows, c.dir)
			by := rows[c.dir].LimitedBy
			if c.wmem {
				assert.True(t, strings.HasPrefix(by, c.want) && strings.HasSuffix(by, "(client)"), "%q: %s", by, rows[c.dir].LimitedByDetail)
				return
			}
			assert.Equal(t, c.want, by, rows[c.dir].LimitedByDetail)
		})
	}
}
