package latency

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/internal/peertest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sockperfReport is what sockperf 3.7 prints at the end of a client run.
type sockperfReport struct {
	TotalSent, TotalReceived int64 // [Total Run]
	ValidSent, ValidReceived int64 // [Valid Duration]
	Avg, StdDev              float64
	Dropped, Dup, OOO        int64
	Observations             int64
	Min, Max                 float64
	Percentiles              map[string]float64 // "50.000" -> usec
}

var (
	ansi      = regexp.MustCompile(`\x1b\[[0-9;]*m`)
	reTotal   = regexp.MustCompile(`\[Total Run\].*SentMessages=(\d+); ReceivedMessages=(\d+)`)
	reValid   = regexp.MustCompile(`\[Valid Duration\].*SentMessages=(\d+); ReceivedMessages=(\d+)`)
	reAvg     = regexp.MustCompile(`====> avg-(?:rtt|latency)=([\d.]+) \(std-dev=([\d.]+)`)
	reDropped = regexp.MustCompile(`# dropped messages = (\d+); # duplicated messages = (\d+); # out-of-order messages = (\d+)`)
	reObs     = regexp.MustCompile(`Total (\d+) observations`)
	rePct     = regexp.MustCompile(`---> percentile ([\d.]+) =\s*([\d.]+)`)
	reMinMax  = regexp.MustCompile(`---> <(MIN|MAX)> observation =\s*([\d.]+)`)
)

// parseSockperf reads the first statistics block of sockperf's output.
func parseSockperf(out string) (sockperfReport, error) {
	r := sockperfReport{Percentiles: map[string]float64{}}
	out = ansi.ReplaceAllString(out, "")
	i64 := func(s string) int64 { v, _ := strconv.ParseInt(s, 10, 64); return v }
	f64 := func(s string) float64 { v, _ := strconv.ParseFloat(s, 64); return v }
	m := reTotal.FindStringSubmatch(out)
	if m == nil {
		return r, fmt.Errorf("no [Total Run] line in sockperf output:\n%s", out)
	}
	r.TotalSent, r.TotalReceived = i64(m[1]), i64(m[2])
	if m = reValid.FindStringSubmatch(out); m != nil {
		r.ValidSent, r.ValidReceived = i64(m[1]), i64(m[2])
	}
	if m = reAvg.FindStringSubmatch(out); m != nil {
		r.Avg, r.StdDev = f64(m[1]), f64(m[2])
	}
	if m = reDropped.FindStringSubmatch(out); m != nil {
		r.Dropped, r.Dup, r.OOO = i64(m[1]), i64(m[2]), i64(m[3])
	}
	if m = reObs.FindStringSubmatch(out); m != nil {
		r.Observations = i64(m[1])
	}
	for _, m := range rePct.FindAllStringSubmatch(out, -1) {
		if _, dup := r.Percentiles[m[1]]; !dup {
			r.Percentiles[m[1]] = f64(m[2])
		}
	}
	for _, m := range reMinMax.FindAllStringSubmatch(out, 2) {
		if m[1] == "MIN" {
			r.Min = f64(m[2])
		} else {
			r.Max = f64(m[2])
		}
	}
	return r, nil
}

// parseFullLog reads the per-message rows of a sockperf --full-log file and
// returns rx-tx of each as a duration (the file has nanosecond timestamps).
func parseFullLog(r io.Reader) ([]time.Duration, error) {
	var out []time.Duration
	sc := bufio.NewScanner(r)
	ns := func(s string) (int64, error) {
		sec, frac, _ := strings.Cut(strings.TrimSpace(s), ".")
		a, err := strconv.ParseInt(sec, 10, 64)
		if err != nil {
			return 0, err
		}
		frac = (frac + "000000000")[:9]
		b, err := strconv.ParseInt(frac, 10, 64)
		return a*1e9 + b, err
	}
	for sc.Scan() {
		f := strings.Split(sc.Text(), ",")
		if len(f) != 4 {
			continue
		}
		if _, err := strconv.Atoi(strings.TrimSpace(f[0])); err != nil {
			continue
		}
		tx, err := ns(f[1])
		if err != nil {
			return nil, err
		}
		rx, err := ns(f[2])
		if err != nil {
			return nil, err
		}
		out = append(out, time.Duration(rx-tx))
	}
	return out, sc.Err()
}

// assertMatchesSockperf checks our statistics of sockperf's own samples
// against what sockperf printed (3 decimals).
func assertMatchesSockperf(t *testing.T, rep sockperfReport, s Summary) {
	t.Helper()
	const eps = 0.0015
	assert.Equal(t, rep.Observations, s.Observations)
	assert.InDelta(t, rep.Avg, usOf(s.Avg), eps, "avg")
	assert.InDelta(t, rep.StdDev, usOf(s.StdDev), eps, "std-dev")
	assert.InDelta(t, rep.Min, usOf(s.Min), eps, "min")
	assert.InDelta(t, rep.Max, usOf(s.Max), eps, "max")
	for k, v := range map[string]float64{
		"25.000": usOf(s.P25), "50.000": usOf(s.P50), "75.000": usOf(s.P75), "90.000": usOf(s.P90),
		"99.000": usOf(s.P99), "99.900": usOf(s.P999), "99.990": usOf(s.P9999), "99.999": usOf(s.P99999),
	} {
		require.Contains(t, rep.Percentiles, k)
		assert.InDelta(t, rep.Percentiles[k], v, eps, "percentile %s", k)
	}
}

func TestSummaryMatchesSockperfFixture(t *testing.T) {
	out, err := os.ReadFile("testdata/sockperf-3.7-pingpong.txt")
	require.NoError(t, err)
	rep, err := parseSockperf(string(out))
	require.NoError(t, err)
	f, err := os.Open("testdata/sockperf-3.7-full-log.csv")
	require.NoError(t, err)
	defer f.Close()
	samples, err := parseFullLog(f)
	require.NoError(t, err)
	require.Len(t, samples, 1650)
	assertMatchesSockperf(t, rep, summarizeSamples(samples, 0))
}

func sockperfBinary(t testing.TB) string {
	return peertest.Binary(t, "apt-get install sockperf", "sockperf")
}

// startSockperfServer runs `sockperf server` on a free loopback port until the
// test ends and returns its address once it answers.
func startSockperfServer(t testing.TB, network string) string {
	bin := sockperfBinary(t)
	port := peertest.FreePort(t)
	args := []string{"server", "-i", "127.0.0.1", "-p", strconv.Itoa(port)}
	if network == "tcp" {
		args = append(args, "--tcp")
	}
	cmd := exec.Command(bin, args...)
	// The process writes while the test may read: a plain bytes.Buffer
	// would race.
	var out peertest.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		res, err := PingPong(context.Background(), addr, &PingPongConfig{Network: network, Count: 1, ReadTimeout: 100 * time.Millisecond})
		if err == nil && res.Observations == 1 {
			return addr
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("sockperf server did not answer on %s: %s", addr, out.String())
	return ""
}

// runSockperf runs a sockperf client and returns its report and full log.
func runSockperf(t testing.TB, args ...string) (sockperfReport, []time.Duration) {
	bin := sockperfBinary(t)
	logf := filepath.Join(t.TempDir(), "full.csv")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []byte
	var err error
	for try := 1; ; try++ {
		out, err = exec.CommandContext(ctx, bin, append(args, "--full-log", logf)...).CombinedOutput()
		// sockperf's UDP ping-pong client never resends: when the loaded
		// machine loses or stalls the one datagram in flight, its whole
		// run ends without a reply. That is sockperf's limit, not ours, so
		// such a run is repeated (twice at most).
		if err != nil || !strings.Contains(string(out), "No messages were received from the server") || try == 3 {
			break
		}
		t.Logf("sockperf %v got no reply at all (try %d): running it again", args, try)
	}
	require.NoError(t, err, "sockperf %v: %s", args, out)
	rep, err := parseSockperf(string(out))
	require.NoError(t, err)
	f, err := os.Open(logf)
	require.NoError(t, err)
	defer f.Close()
	samples, err := parseFullLog(f)
	require.NoError(t, err)
	return rep, samples
}

func TestOurClientAgainstSockperfServer(t *testing.T) {
	for _, network := range []string{"udp", "tcp"} {
		t.Run(network, func(t *testing.T) {
			addr := startSockperfServer(t, network)
			for _, mode := range []time.Duration{0, time.Millisecond} {
				// A counted run: how many round trips fit in a time is
				// the machine's; 300 of them are each measured. A reply
				// is awaited 10 s, so a loaded machine's stall is no drop.
				res, err := PingPong(context.Background(), addr, &PingPongConfig{
					Network: network, Count: 300, MessageSize: 64, Spin: mode, ReadTimeout: 10 * time.Second,
				})
				if mode > 0 && err != nil {
					require.ErrorIs(t, err, errors.ErrUnsupported)
					continue
				}
				require.NoError(t, err, mode)
				assert.Equal(t, int64(300), res.Observations, mode)
				assert.Equal(t, int64(0), res.Dropped, mode)
				assert.Equal(t, int64(0), res.OutOfOrder, mode)
				assert.Equal(t, res.Sent, res.Received, mode)
				assert.Greater(t, usOf(res.P50), 0.0)
			}
			res, err := PingPong(context.Background(), addr, &PingPongConfig{
				Network: network, Duration: 500 * time.Millisecond, WarmUp: 100 * time.Millisecond,
				MPS: 2000, ReplyEvery: 10, MessageSize: 64, ReadTimeout: 10 * time.Second,
			})
			require.NoError(t, err)
			// The schedule fixes the messages; sockperf answers only the
			// ones that ask (every 10th), each received or, asked in the
			// window, dropped.
			assert.InDelta(t, 1000, res.Sent, 2)
			warm := map[string]int64{"udp": 8}[network]
			asked := int64(pongsSent(uint64(warm+res.Sent), uint64(warm+1), 10))
			assert.LessOrEqual(t, res.Received+res.Dropped, asked, "sockperf answers only the messages that ask")
			assert.LessOrEqual(t, res.Observations, res.Received)
			assert.Positive(t, res.Observations)
			if network == "tcp" {
				// Nothing is lost over TCP: every reply came.
				assert.Equal(t, int64(0), res.Dropped)
				assert.Equal(t, asked, res.Received)
			}
			// Over UDP sockperf's socket buffer holds ~100 ms of this
			// load; a longer stall of a loaded machine loses datagrams,
			// as many as it stalls.
		})
	}
}

func TestSockperfClientsAgainstOurServer(t *testing.T) {
	sockperfBinary(t)
	for _, network := range []string{"udp", "tcp"} {
		t.Run(network, func(t *testing.T) {
			addr, srv := startServer(t, network, nil)
			host, port, _ := net.SplitHostPort(addr)
			base := []string{"-i", host, "-p", port, "-t", "1", "-m", "64"}
			if network == "tcp" {
				base = append(base, "--tcp")
			}
			before := srv.Stats()
			rep, samples := runSockperf(t, append([]string{"ping-pong", "--full-rtt"}, base...)...)
			// How many round trips sockperf completes in its second is
			// the machine's; each it counts is accounted for.
			assert.Positive(t, rep.ValidSent)
			assert.LessOrEqual(t, rep.TotalSent-rep.TotalReceived, int64(1), "at most the message in flight when the timer fired")
			assert.Equal(t, int64(0), rep.OOO)
			if network == "tcp" {
				assert.Eventually(t, func() bool { return srv.Stats().Messages-before.Messages >= rep.TotalSent },
					10*time.Second, time.Millisecond)
			}
			pp := srv.Stats()
			// A reply sockperf counts as dropped is a message our server
			// never got or a reply sockperf did not get before its timer.
			assert.LessOrEqual(t, rep.Dropped, (rep.TotalSent-(pp.Messages-before.Messages))+((pp.Replies-before.Replies)-rep.TotalReceived))
			assert.LessOrEqual(t, rep.ValidReceived, rep.ValidSent)
			// Our statistics of sockperf's own samples equal what it printed.
			assertMatchesSockperf(t, rep, summarizeSamples(samples, 0))
			assert.GreaterOrEqual(t, srv.Stats().Replies, rep.TotalReceived)

			before = srv.Stats()
			rep, _ = runSockperf(t, append([]string{"under-load", "--mps", "2000", "--reply-every", "10"}, base...)...)
			if network == "tcp" {
				// What sockperf wrote before it exited may still be on its
				// way to our server: wait (bounded) until all has arrived.
				assert.Eventually(t, func() bool { return srv.Stats().Messages-before.Messages >= rep.TotalSent },
					10*time.Second, time.Millisecond)
			}
			after := srv.Stats()
			msgs, replies := after.Messages-before.Messages, after.Replies-before.Replies
			// How many messages sockperf manages to send in its second, and
			// so how many answers it observes, is its own and the machine's
			// business (a loaded machine slows it to a fraction of 2000).
			assert.Positive(t, msgs)
			assert.LessOrEqual(t, msgs, rep.TotalSent)
			assert.LessOrEqual(t, rep.Observations, rep.TotalReceived)
			// Our server answers exactly the messages that ask: every 10th
			// of what it got (each message lost on the way shifts the
			// count by at most one).
			assert.InDelta(t, float64(msgs)/10, float64(replies), 2+float64(rep.TotalSent-msgs)+0.005*float64(msgs))
			// sockperf stops reading when its timer fires, so replies in
			// flight then are sent by us but not counted by it (the server
			// counts a reply before it writes it).
			assert.LessOrEqual(t, rep.TotalReceived, replies)
			if network == "tcp" {
				assert.Equal(t, rep.TotalSent, msgs)
			}
			// Every reply sockperf counts as dropped is a message our server
			// never got (loopback UDP loses datagrams when a socket buffer
			// overflows, as when the loaded machine starves a side) or a
			// reply sockperf did not get before its timer fired (a loaded
			// machine can hold loopback data back longer than sockperf's
			// cool-down, over TCP too).
			assert.LessOrEqual(t, rep.Dropped, (rep.TotalSent-msgs)+(replies-rep.TotalReceived))
		})
	}
}
