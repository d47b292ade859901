//go:build linux

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/internal/pathlab"
	"github.com/netperfkit/netperfkit/internal/peertest"
)

// TestUDPAnswersFromTheAddressAsked: our server's host B holds a primary
// and a secondary address; clients on A send their UDP tests to the
// secondary. Each UDP stream socket must answer from the secondary (the
// control connection's local address), or the client's connected socket
// drops the hello's answer and every reverse datagram: before the fix the
// sockets bound the listener's wildcard and answered from the primary
// (issue 41). Forward and reverse, with our client, Debian's iperf3 and
// 3.21.
func TestUDPAnswersFromTheAddressAsked(t *testing.T) {
	lab := pathlab.New(t, &pathlab.Config{Prefix: "np41"})
	i321 := peertest.NewIPerf3(t)
	debian := peertest.Binary(t, "apt-get install iperf3", "iperf3")
	if t.Skipped() || lab == nil {
		return
	}
	ours := pathlab.Build(t, "github.com/netperfkit/netperfkit/examples/iperf3")
	// The secondary address: B's primary moved to 198.19/16, still inside
	// 198.18.0.0/15; A reaches it through its veth.
	b := lab.B.Addr.As4()
	secondary := netip.AddrFrom4([4]byte{198, 19, b[2], b[3]})
	lab.B.Run(t, "ip", "addr", "add", secondary.String()+"/32", "dev", lab.B.Dev)
	lab.A.Run(t, "ip", "route", "add", secondary.String()+"/32", "dev", lab.A.Dev)

	const port = 5410
	ctx, cancel := context.WithCancel(context.Background())
	srv := lab.B.Command(ctx, ours, "-s", "-p", strconv.Itoa(port))
	var out peertest.Buffer
	srv.Stdout, srv.Stderr = &out, &out
	require.NoError(t, srv.Start())
	t.Cleanup(func() {
		cancel()
		_ = srv.Wait()
		t.Logf("server output:\n%s", out.String())
	})
	lab.B.WaitListening(t, port, 10*time.Second)

	for _, c := range []struct{ name, bin string }{{"ours", ours}, {"debian", debian}, {"3.21", i321}} {
		for _, reverse := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/reverse=%v", c.name, reverse), func(t *testing.T) {
				args := []string{"-c", secondary.String(), "-p", strconv.Itoa(port), "-u", "-b", "10M", "-t", "1", "-J"}
				if reverse {
					args = append(args, "-R")
				}
				received := runJSONRetry(t, lab.A, c.bin, args)
				assert.Positive(t, received, "datagrams crossed from %s's secondary address", lab.B.Netns)
			})
		}
	}
}

// runJSONRetry runs an iperf3 UDP client in h and returns the datagrams
// the receiving end counted (end.sum.packets minus lost_packets). A
// stock client that finds our server still closing the last test is
// turned away as busy: that try is run again, at most ten times.
func runJSONRetry(t *testing.T, h *pathlab.Host, bin string, args []string) int64 {
	t.Helper()
	for i := 0; ; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		outb, err := h.Command(ctx, bin, args...).Output()
		cancel()
		var doc struct {
			End struct {
				Sum struct {
					Packets     int64 `json:"packets"`
					LostPackets int64 `json:"lost_packets"`
				} `json:"sum"`
			} `json:"end"`
			Error string `json:"error"`
		}
		_ = json.Unmarshal(outb, &doc)
		var exit *exec.ExitError
		if i < 10 && errors.As(err, &exit) && strings.Contains(doc.Error, "busy") {
			time.Sleep(200 * time.Millisecond)
			continue
		}
		require.NoError(t, err, "%s %v: %s", bin, args, outb)
		require.Empty(t, doc.Error)
		return doc.End.Sum.Packets - doc.End.Sum.LostPackets
	}
}
