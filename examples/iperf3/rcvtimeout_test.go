package main

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/internal/peertest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stockBinaries are the stock iperf3 builds the tests run against: the
// Debian one (3.12) and a 3.21 build.
func stockBinaries(t *testing.T) map[string]string {
	return map[string]string{
		"3.12": peertest.Binary(t, "apt-get install iperf3", "iperf3"),
		"3.21": peertest.NewIPerf3(t),
	}
}

// TestBurstAgainstStockServers runs "-b rate/burst" against 3.12 and 3.21
// servers, TCP and UDP: the test runs at its rate and warns about nothing.
func TestBurstAgainstStockServers(t *testing.T) {
	for name, bin := range stockBinaries(t) {
		port := server321(t, bin)
		for _, shape := range []string{"-u -b 20M/16 -l 1000", "-b 50M/8 -l 64K", "-R -u -b 20M/16 -l 1000"} {
			t.Run(name+" "+shape, func(t *testing.T) {
				args := append([]string{"-c", "127.0.0.1", "-p", strconv.Itoa(port), "-t", "1", "-J"}, strings.Fields(shape)...)
				out, errOut, code := runTool321(args...)
				require.Equal(t, 0, code, errOut)
				assert.Empty(t, errOut)
				doc := decodeEnd(t, out)
				assert.Positive(t, doc.End.Sum.Bytes+doc.End.SumReceived.Bytes, out)
			})
		}
	}
}

// TestRcvTimeoutBothRoles ends a test whose sender writes one byte a second
// with --rcv-timeout: our client receiving (-R) from stock servers, and
// stock clients sending to our server. Every side words it as 3.21 does.
func TestRcvTimeoutBothRoles(t *testing.T) {
	slow := []string{"-b", "8", "-l", "1", "-t", "20"}
	for name, bin := range stockBinaries(t) {
		t.Run("our client, "+name+" server", func(t *testing.T) {
			port := server321(t, bin)
			args := append([]string{"-c", "127.0.0.1", "-p", strconv.Itoa(port), "-R", "--rcv-timeout", "300"}, slow...)
			start := time.Now()
			_, errOut, code := runTool321(args...)
			assert.Equal(t, 1, code)
			assert.Contains(t, errOut, "iperf3: error - idle timeout for receiving data")
			assert.Less(t, time.Since(start), 15*time.Second)
		})
		t.Run(name+" client, our server", func(t *testing.T) {
			port, _, serr := ourServer(t, "--rcv-timeout", "300")
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			out, err := exec.CommandContext(ctx, bin, append([]string{"-c", "127.0.0.1", "-p", strconv.Itoa(port)}, slow...)...).CombinedOutput()
			require.Error(t, err, string(out))
			assert.Contains(t, string(out), "idle timeout for receiving data")
			assert.Eventually(t, func() bool {
				return strings.Contains(serr.String(), "iperf3: error - idle timeout for receiving data")
			}, 5*time.Second, 10*time.Millisecond, "the server says why: %s", serr.String())
		})
	}
}

// TestServerPrintsLive checks that the server prints as the test runs, as
// 3.21's does: the accepted connection and the first interval line reach
// its output while the client is still sending, in text and --json-stream.
func TestServerPrintsLive(t *testing.T) {
	for _, tc := range []struct{ flags, accepted, interval string }{
		{"", "Accepted connection from 127.0.0.1", "  0.00-1.00  "},
		{"--json-stream", `{"event":"start"`, `{"event":"interval"`},
	} {
		t.Run("server "+tc.flags, func(t *testing.T) {
			port, sout, _ := ourServer(t, strings.Fields(tc.flags)...)
			done := make(chan int, 1)
			go func() {
				_, _, code := runTool(context.Background(), "-c", "127.0.0.1", "-p", strconv.Itoa(port), "-t", "4")
				done <- code
			}()
			printed := func() bool {
				s := sout.String()
				return strings.Contains(s, tc.accepted) && strings.Contains(s, tc.interval)
			}
			require.Eventually(t, func() bool {
				select {
				case code := <-done:
					done <- code
					return true // the client ended: checked below
				default:
					return printed()
				}
			}, 20*time.Second, 10*time.Millisecond)
			select {
			case code := <-done:
				t.Fatalf("the client ended (exit %d) before the server printed its first interval:\n%s", code, sout.String())
			default:
			}
			require.Equal(t, 0, <-done)
			assert.NotContains(t, sout.String(), `{"event":"error"`)
		})
	}
}
