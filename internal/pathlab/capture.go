package pathlab

import (
	"bufio"
	"cmp"
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/internal/peertest"
)

// captureDrain is how long Capture waits after fn before it stops tcpdump:
// longer than libpcap's 1 s buffer timeout, so the last block of packets
// has reached the file.
const captureDrain = 1500 * time.Millisecond

// Capture runs fn while tcpdump records both directions on h.Dev, packets
// that match filter (a pcap filter such as "udp" or "udp or tcp") with
// nanosecond stamps, and returns the packets that carry data in time order.
// It skips (or fails) tb without tcpdump, and fails it when tcpdump does
// not start or its file cannot be read.
//
// The one rule of every capture in the lab: never --immediate-mode. Immediate
// mode does not change a packet's stamp, only when tcpdump wakes up, and the
// wake-up comes from inside the tap, for every packet. On transmit the tap
// runs after its own stamp and before the device takes the kernel's; on a TCP
// receive, after its stamp and before IP input takes the kernel's. Each
// wake-up (an inter-processor interrupt on a VM) thus lands between the
// capture's stamp and the kernel's, and slows the path itself: with it, per
// message, the kernel view read 20-60 us below the capture (UDP, 1 % of
// messages) and 20-40 us above it (TCP), whole stretches of messages carried
// a 15-20 us wake-up, and cache GETs at 1000/s read 60-90 us where they read
// 24-44 without it (docs/benchmarks.md, "The capture corrected: no immediate
// mode"). Without it tcpdump gets its packets a block at a time, at the
// latest when libpcap's 1 s timeout expires, and the interrupt that ends
// tcpdump loses the block in hand (a run under a TCP flow lost its last
// 0.3 s): so Capture waits captureDrain after fn before it stops tcpdump.
func (h *Host) Capture(tb testing.TB, filter string, fn func()) []Packet {
	tb.Helper()
	dump := peertest.Binary(tb, "apt-get install tcpdump", "tcpdump")
	if dump == "" {
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	file := filepath.Join(tb.TempDir(), "lab.pcap")
	cmd := h.Command(ctx, dump, "-i", h.Dev, "-Q", "inout", "-s", "160", "-B", "32768",
		"--time-stamp-precision=nano", "-U", "-w", file, filter)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	stderr, err := cmd.StderrPipe()
	if err != nil {
		tb.Fatalf("pathlab: tcpdump: %v", err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatalf("pathlab: tcpdump: %v", err)
	}
	// tcpdump says "listening on" once it captures.
	sc := bufio.NewScanner(stderr)
	var said strings.Builder
	for sc.Scan() && !strings.Contains(sc.Text(), "listening on") {
		said.WriteString(sc.Text() + "\n")
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	fn()
	time.Sleep(captureDrain)
	cancel()
	_ = cmd.Wait()
	f, err := os.Open(file)
	if err != nil {
		tb.Fatalf("pathlab: tcpdump on %s in %s wrote nothing: %v: %s", h.Dev, h.Netns, err, said.String())
	}
	defer f.Close()
	pkts, err := ReadPcap(bufio.NewReader(f))
	if err != nil {
		tb.Fatalf("%v", err)
	}
	slices.SortStableFunc(pkts, func(a, b Packet) int { return cmp.Compare(a.TS, b.TS) })
	return pkts
}
