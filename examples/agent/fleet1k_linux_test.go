//go:build linux

package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/internal/pathlab"
	"github.com/netperfkit/netperfkit/internal/peertest"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The 1,000-peer lab (issue 41): one agent, and 1,000 peers behind one DNS
// name, all answered by one sockperf-compatible server. The peers'
// addresses are a /22 that the agent's namespace routes to the server's,
// where nftables rewrites them to the server's own address (so the replies
// come back from the address asked, whatever the server binds), and dnsmasq
// gives the name's 1,000 A records. The /22 is four zones of a /24 each.
const (
	lab1kPeers  = 1000
	lab1kPrefix = "198.19.200.0/22" // outside pathlab's /30s (198.18.0.0/17 for the first labs)
	lab1kName   = "peers.np41.test"
	lab1kZone   = "az-a" // the agent's own
)

// lab1kZones is -zones for the /22.
var lab1kZones = "198.19.200.0/24=az-a,198.19.201.0/24=az-b,198.19.202.0/24=az-c,198.19.203.0/24=az-d"

var (
	lab1kAgent  = flag.String("lab1k-agent", "", "agent binary for TestFleet1000Peers (default: build this one), to measure an older build")
	lab1kWindow = flag.Duration("lab1k-window", 30*time.Second, "how long TestFleet1000Peers measures the agent's CPU")
	lab1kArgs   = flag.String("lab1k-args", "", "more agent flags for TestFleet1000Peers, space-separated")
	lab1kN      = flag.Int("lab1k-peers", lab1kPeers, "peers behind the name in TestFleet1000Peers (1..1000), spread over the /22's four zones")
)

// lab1k is the lab: A holds the agent, B the server and dnsmasq.
type lab1k struct {
	*pathlab.Lab
	dir string
}

func newLab1k(t *testing.T) *lab1k {
	peertest.Root(t)
	dnsBin := peertest.Binary(t, "apt-get install dnsmasq (scripts/install-peers.sh)", "dnsmasq")
	nftBin := peertest.Binary(t, "apt-get install nftables (scripts/install-peers.sh)", "nft")
	pl := pathlab.New(t, &pathlab.Config{Prefix: "np41"})
	if pl == nil || t.Skipped() {
		t.SkipNow()
	}
	l := &lab1k{Lab: pl, dir: t.TempDir()}
	l.A.Run(t, "ip", "route", "add", lab1kPrefix, "via", l.B.Addr.String())
	rules := fmt.Sprintf("table ip np41 {\n chain pre {\n  type nat hook prerouting priority dstnat;\n  ip daddr %s dnat to %s\n }\n}\n", lab1kPrefix, l.B.Addr)
	require.NoError(t, os.WriteFile(filepath.Join(l.dir, "nat.nft"), []byte(rules), 0o600))
	l.B.Run(t, nftBin, "-f", filepath.Join(l.dir, "nat.nft"))

	var hosts strings.Builder
	base := netip.MustParsePrefix(lab1kPrefix).Addr().As4()
	n := min(max(*lab1kN, 1), lab1kPeers)
	for i := range n {
		// Spread over the /22: peer i at offset 1 + i*1000/n.
		o := 1 + i*lab1kPeers/n
		fmt.Fprintf(&hosts, "%d.%d.%d.%d %s\n", base[0], base[1], int(base[2])+o/256, o%256, lab1kName)
	}
	require.NoError(t, os.WriteFile(filepath.Join(l.dir, "hosts"), []byte(hosts.String()), 0o644))
	l.startDNS(t, dnsBin, "--local=/np41.test/")
	etc := filepath.Join("/etc/netns", l.A.Netns)
	require.NoError(t, os.MkdirAll(etc, 0o755))
	t.Cleanup(func() { _ = os.RemoveAll(etc) })
	require.NoError(t, os.WriteFile(filepath.Join(etc, "resolv.conf"),
		[]byte("nameserver "+l.B.Addr.String()+"\noptions timeout:1 attempts:2\n"), 0o644))
	return l
}

// startDNS runs dnsmasq in B on B's address with the lab's hosts file and
// no upstream, plus more options.
func (l *lab1k) startDNS(t *testing.T, bin string, more ...string) {
	args := append([]string{"--keep-in-foreground", "--conf-file=/dev/null", "--no-resolv", "--no-hosts",
		"--addn-hosts=" + filepath.Join(l.dir, "hosts"), "--listen-address=" + l.B.Addr.String(),
		"--bind-interfaces", "--user=root", "--pid-file=" + filepath.Join(l.dir, "dnsmasq.pid"), "--log-facility=-"}, more...)
	l.startIn(t, l.B, bin, args...)
	waitUDP53(t, l.B)
}

// startIn runs a command in h's namespace until the test ends.
func (l *lab1k) startIn(t *testing.T, h *pathlab.Host, name string, args ...string) (*exec.Cmd, *peertest.Buffer) {
	var out peertest.Buffer
	cmd := h.Command(context.Background(), name, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("%s log tail:\n%s", filepath.Base(name), tail(out.String(), 3000))
		}
	})
	return cmd, &out
}

// waitUDP53 waits until something in h listens on UDP port 53.
func waitUDP53(t *testing.T, h *pathlab.Host) {
	require.Eventually(t, func() bool {
		return strings.Contains(h.Run(t, "ss", "-lun"), ":53 ")
	}, 10*time.Second, 50*time.Millisecond, "dnsmasq listening")
}

// nsClient is an HTTP client whose connections start in h's namespace.
func nsClient(h *pathlab.Host) *http.Client {
	dial := func(ctx context.Context, network, a string) (net.Conn, error) {
		var c net.Conn
		err := h.Do(func() error {
			var err error
			c, err = (&net.Dialer{Timeout: 2 * time.Second}).DialContext(ctx, network, a)
			return err
		})
		return c, err
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: dial, DisableKeepAlives: true}}
}

// protoAccept is what Prometheus 2.42 asks for with native histograms on.
const protoAccept = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.7,text/plain;version=0.0.4;q=0.3"

// scrapeBody fetches url with the Accept header given ("" for text).
func scrapeBody(t *testing.T, hc *http.Client, url, accept string) []byte {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := hc.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return b
}

// scrapeStats is what one text scrape holds.
type scrapeStats struct {
	series   int            // sample lines
	native   int            // series in a Prometheus with native histograms: one per histogram
	peers    map[string]int // series by peer label
	zonePair map[string]int // RTT histograms' series by src>dst zone
	known    float64
}

func parseScrape(t *testing.T, b []byte) scrapeStats {
	tp := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := tp.TextToMetricFamilies(bytes.NewReader(b))
	require.NoError(t, err)
	st := scrapeStats{peers: map[string]int{}, zonePair: map[string]int{}}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			n := 1
			if h := m.GetHistogram(); h != nil {
				n = len(h.GetBucket()) + 2
			}
			st.series += n
			st.native++
			labels := map[string]string{}
			for _, lp := range m.GetLabel() {
				labels[lp.GetName()] = lp.GetValue()
			}
			if p, ok := labels["peer"]; ok && strings.HasPrefix(name, "netperfkit_probe_") {
				st.peers[p] += n
			}
			if name == "netperfkit_probe_rtt_zone_seconds" {
				st.zonePair[labels["src_zone"]+">"+labels["dst_zone"]] += n
			}
			if name == "netperfkit_mesh_peers" && labels["state"] == "known" {
				st.known = m.GetGauge().GetValue()
			}
		}
	}
	return st
}

// TestFleet1000Peers runs the built agent against the 1,000-peer lab with
// -rtt-every 1s and reports what issue 41 asks of it: peers known, per-peer
// series and the bound on them, the zone-pair histograms, the text and
// protobuf scrape sizes, CPU and memory. See the README's "A fleet's
// series budget".
func TestFleet1000Peers(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping the 1,000-peer lab in -short mode")
	}
	l := newLab1k(t)
	port := serveSockperfIn(t, l.B)
	agent := *lab1kAgent
	newAgent := agent == ""
	if newAgent {
		agent = buildAgent(t)
	}
	metricsAddr := net.JoinHostPort(l.A.Addr.String(), "9469")
	args := []string{"-metrics", metricsAddr, "-peers-dns", lab1kName + "::" + strconv.Itoa(port), "-rtt-every", "1s",
		"-iperf3-port", "0", "-sockperf-port", "0", "-log-level", "warn"}
	if newAgent {
		args = append(args, "-zone", lab1kZone, "-zones", lab1kZones)
	}
	args = append(args, strings.Fields(*lab1kArgs)...)
	cmd, _ := l.startIn(t, l.A, agent, args...)
	hc := nsClient(l.A)
	url := "http://" + metricsAddr + "/metrics"

	var st scrapeStats
	require.Eventually(t, func() bool {
		resp, err := hc.Get(url)
		if err != nil {
			return false
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		st = parseScrape(t, b)
		return st.known == float64(min(max(*lab1kN, 1), lab1kPeers))
	}, 30*time.Second, 200*time.Millisecond, "the agent knows the 1,000 peers")
	time.Sleep(20 * time.Second) // the "after 20 s"

	// CPU over the window, scraped (text) once a second as Prometheus would.
	c0, t0 := procCPU(t, cmd.Process.Pid), time.Now()
	for time.Since(t0) < *lab1kWindow {
		_ = scrapeBody(t, hc, url, "")
		time.Sleep(time.Second)
	}
	cpu := procCPU(t, cmd.Process.Pid) - c0
	rss := procRSS(t, cmd.Process.Pid)
	text := scrapeBody(t, hc, url, "")
	proto := scrapeBody(t, hc, url, protoAccept)
	st = parseScrape(t, text)
	perPeer := 0
	for _, n := range st.peers {
		perPeer = max(perPeer, n)
	}
	t.Logf("%d-peer lab, -rtt-every 1s, %v after the agent knew them: known %v, peers with series %d (%d series each at most), "+
		"zone pairs %d, series %d (%d with native histograms); /metrics text %d bytes, protobuf %d bytes; CPU %.2f%% of a core over %v; RSS %.1f MiB",
		*lab1kN, 20*time.Second+*lab1kWindow, st.known, len(st.peers), perPeer, len(st.zonePair), st.series, st.native, len(text), len(proto),
		100*cpu.Seconds()/time.Since(t0).Seconds(), time.Since(t0).Round(time.Second), float64(rss)/(1<<20))
	if !newAgent {
		return // an older build: numbers only
	}
	if promtool, err := exec.LookPath("promtool"); err == nil {
		lint := exec.Command(promtool, "check", "metrics")
		lint.Stdin = bytes.NewReader(text)
		out, err := lint.CombinedOutput()
		assert.NoError(t, err, "promtool check metrics:\n%s", out)
	}
	bound := 32
	if i := strings.Index(*lab1kArgs, "-peer-series"); i >= 0 {
		bound, _ = strconv.Atoi(strings.Fields((*lab1kArgs)[i:])[1])
	}
	assert.LessOrEqual(t, len(st.peers), bound, "per-peer series for at most -peer-series peers")
	for _, z := range []string{"az-a", "az-b", "az-c", "az-d"}[:min(4, *lab1kN)] {
		assert.Positive(t, st.zonePair[lab1kZone+">"+z], "zone pair %s>%s", lab1kZone, z)
	}
	assert.Less(t, len(text), 300<<10, "text /metrics under 300 KB")
	assert.Less(t, len(proto), 300<<10, "protobuf /metrics under 300 KB")
}
