//go:build linux

package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/ethtool/ethtooltest"
	"github.com/netperfkit/netperfkit/internal/pathlab"
	"github.com/netperfkit/netperfkit/internal/peertest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// netLab is three agent namespaces and one Prometheus namespace joined by
// a bridge that lives in the Prometheus namespace: nothing is added to the
// host's own network namespace.
type netLab struct {
	ip     string
	prefix string
	promNS string
	agents []string // namespace names
	addrs  []string // the agents' IPv4 addresses
}

// labNet is in 198.18.0.0/15, RFC 2544's benchmarking range.
const labNet = "198.18.77."

func newNetLab(t *testing.T, n int) *netLab {
	return bridgeLab(t, "npk", netip.MustParsePrefix(labNet+"0/24"), n)
}

// bridgeLab builds n agent namespaces on one subnet with the Prometheus
// namespace as their hub (pathlab.NewBridge), under a random prefix that
// starts with tag. The agents find eth0 as their default-route interface.
func bridgeLab(t *testing.T, tag string, subnet netip.Prefix, n int) *netLab {
	var b [3]byte
	_, _ = rand.Read(b[:])
	prefix := tag + hex.EncodeToString(b[:])
	br := pathlab.NewBridge(t, pathlab.BridgeConfig{Prefix: prefix, Net: subnet, Members: n})
	if br == nil {
		t.SkipNow()
	}
	l := &netLab{ip: peertest.Binary(t, "apt-get install iproute2", "ip"), prefix: prefix, promNS: br.Hub.Netns}
	for _, m := range br.Members {
		l.agents = append(l.agents, m.Netns)
		l.addrs = append(l.addrs, m.Addr.String())
	}
	return l
}

// start runs a command inside ns until the test ends; its output goes to
// the returned buffer.
func (l *netLab) start(t *testing.T, ns string, name string, args ...string) (*exec.Cmd, *peertest.Buffer) {
	t.Helper()
	var out peertest.Buffer
	cmd := exec.Command(l.ip, append([]string{"netns", "exec", ns, name}, args...)...)
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd, &out
}

// promClient queries a Prometheus that listens on loopback inside ns: its
// connections are opened from a thread that joined ns.
type promClient struct {
	base string
	hc   *http.Client
}

func newPromClient(nsPath, addr string) *promClient {
	dial := func(ctx context.Context, network, a string) (net.Conn, error) {
		var c net.Conn
		err := ethtooltest.InNetns(nsPath, func() error {
			var err error
			c, err = (&net.Dialer{Timeout: 2 * time.Second}).DialContext(ctx, network, a)
			return err
		})
		return c, err
	}
	return &promClient{base: "http://" + addr, hc: &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{DialContext: dial, DisableKeepAlives: true},
	}}
}

// sample is one series of an instant vector.
type sample struct {
	labels map[string]string
	value  float64
}

// query runs an instant query; a Prometheus that is not up yet gives an
// error, which callers retry.
func (p *promClient) query(q string) ([]sample, error) { return p.queryAt(q, "") }

// queryAt runs an instant query at time ts (Unix seconds; "" for now).
func (p *promClient) queryAt(q, ts string) ([]sample, error) {
	u := p.base + "/api/v1/query?query=" + url.QueryEscape(q)
	if ts != "" {
		u += "&time=" + ts
	}
	resp, err := p.hc.Get(u)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Status string
		Error  string
		Data   struct {
			Result []struct {
				Metric map[string]string
				Value  [2]any
			}
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, err
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("query %q: %s", q, body.Error)
	}
	var out []sample
	for _, r := range body.Data.Result {
		s, _ := r.Value[1].(string)
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("query %q: value %q: %w", q, s, err)
		}
		out = append(out, sample{r.Metric, v})
	}
	return out, nil
}

// metadataType returns the type Prometheus recorded for a metric.
func (p *promClient) metadataType(metric string) (string, error) {
	resp, err := p.hc.Get(p.base + "/api/v1/metadata?metric=" + url.QueryEscape(metric))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var body struct {
		Data map[string][]struct{ Type string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return "", err
	}
	if len(body.Data[metric]) == 0 {
		return "", fmt.Errorf("no metadata for %s yet", metric)
	}
	return body.Data[metric][0].Type, nil
}

// eventually polls q until ok accepts its result, and returns that result.
func (p *promClient) eventually(t *testing.T, deadline time.Time, q string, ok func([]sample) bool) []sample {
	t.Helper()
	var last []sample
	var lastErr error
	for time.Now().Before(deadline) {
		last, lastErr = p.query(q)
		if lastErr == nil && ok(last) {
			return last
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("query %q: never satisfied before the deadline; last result %v, error %v", q, last, lastErr)
	return nil
}

// TestMeshWithPrometheus runs the built agent in three network namespaces,
// each probing the other two, and a real Prometheus that scrapes all three;
// it checks through Prometheus's HTTP API what an operator would see.
func TestMeshWithPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping the three-namespace Prometheus test in -short mode")
	}
	peertest.Root(t)
	promBin := peertest.Binary(t, "apt-get install prometheus (scripts/install-peers.sh)", "prometheus")
	agent := buildAgent(t)
	lab := newNetLab(t, 3)
	deadline := time.Now().Add(90 * time.Second)

	agents := make([]*exec.Cmd, len(lab.agents))
	logs := make([]*peertest.Buffer, len(lab.agents))
	for i, ns := range lab.agents {
		var peers []string
		for j, a := range lab.addrs {
			if j != i {
				peers = append(peers, a)
			}
		}
		agents[i], logs[i] = lab.start(t, ns, agent, "-metrics", lab.addrs[i]+":9469",
			"-peers", strings.Join(peers, ","), "-rtt-every", "200ms", "-probe-timeout", "1s", "-log-format", "json",
			// The RTT series are checked: no probe is flagged as starved
			// (TestFleetDNSSampledNativeStarved tests that).
			"-starved-wait", "1h")
	}
	defer func() {
		if t.Failed() {
			for i, l := range logs {
				t.Logf("agent %d log:\n%s", i, l.String())
			}
		}
	}()

	dir := t.TempDir()
	var targets []string
	for _, a := range lab.addrs {
		targets = append(targets, `"`+a+`:9469"`)
	}
	cfg := "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\nscrape_configs:\n  - job_name: netperfkit\n    static_configs:\n      - targets: [" +
		strings.Join(targets, ", ") + "]\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o600))
	const promAddr = "127.0.0.1:9090" // the namespace is new: the port is free
	_, promLog := lab.start(t, lab.promNS, promBin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+promAddr)
	defer func() {
		if t.Failed() {
			t.Logf("prometheus log:\n%s", promLog.String())
		}
	}()
	prom := newPromClient("/run/netns/"+lab.promNS, promAddr)

	// 3 agents x 2 peers, each with round trips over veth and a bridge.
	rtts := prom.eventually(t, deadline, "netperfkit_probe_rtt_seconds_sum / netperfkit_probe_rtt_seconds_count", func(s []sample) bool {
		return len(s) == 6
	})
	pairs := map[string]bool{}
	for _, s := range rtts {
		inst, p := strings.TrimSuffix(s.labels["instance"], ":9469"), s.labels["peer"]
		assert.NotEqual(t, inst, p, "an agent does not probe itself")
		assert.Contains(t, lab.addrs, p)
		pairs[inst+">"+p] = true
		assert.Greater(t, s.value, 1e-6, "%s: mean RTT", s.labels)
		// A reply later than min(1s, -probe-timeout) is lost, not measured.
		assert.LessOrEqual(t, s.value, 1.0, "%s: mean RTT within the reply cap", s.labels)
	}
	assert.Len(t, pairs, 6)

	// The veth statistics, with node_exporter's names and proper types.
	prom.eventually(t, deadline, `node_ethtool_info{driver="veth",device="eth0"}`, func(s []sample) bool { return len(s) == 3 })
	idx := prom.eventually(t, deadline, `node_ethtool_peer_ifindex{device="eth0"}`, func(s []sample) bool { return len(s) == 3 })
	for _, s := range idx {
		assert.Greater(t, s.value, 0.0, "peer_ifindex is the bridge port's index")
	}
	prom.eventually(t, deadline, `node_ethtool_received_queue_0_xdp_packets{device="eth0"}`, func(s []sample) bool { return len(s) == 3 })
	for metric, want := range map[string]string{
		"node_ethtool_peer_ifindex":                 "gauge",
		"node_ethtool_received_queue_0_xdp_packets": "counter",
		"netperfkit_probe_rtt_seconds":              "histogram",
		"netperfkit_probe_errors_total":             "counter",
	} {
		var typ string
		for time.Now().Before(deadline) {
			var err error
			if typ, err = prom.metadataType(metric); err == nil {
				break
			}
			time.Sleep(250 * time.Millisecond)
		}
		assert.Equal(t, want, typ, metric)
	}

	// Kill the third agent: the other two count errors against it and keep
	// being scraped and probing each other.
	victim := lab.addrs[2]
	alive := func(s []sample) (n float64) {
		for _, x := range s {
			n += x.value
		}
		return n
	}
	before := alive(prom.eventually(t, deadline, `netperfkit_probe_rtt_seconds_count{peer="`+lab.addrs[1]+`",instance="`+lab.addrs[0]+`:9469"}`,
		func(s []sample) bool { return len(s) == 1 }))
	require.NoError(t, agents[2].Process.Signal(syscall.SIGKILL))
	prom.eventually(t, deadline, `up{instance="`+victim+`:9469"} == 0`, func(s []sample) bool { return len(s) == 1 })
	errs := prom.eventually(t, deadline, `sum by (instance) (netperfkit_probe_errors_total{peer="`+victim+`"})`, func(s []sample) bool {
		return len(s) == 2 && s[0].value >= 3 && s[1].value >= 3
	})
	for _, s := range errs {
		assert.NotEqual(t, victim+":9469", s.labels["instance"])
	}
	prom.eventually(t, deadline, `up == 1`, func(s []sample) bool { return len(s) == 2 })
	prom.eventually(t, deadline, `netperfkit_probe_rtt_seconds_count{peer="`+lab.addrs[1]+`",instance="`+lab.addrs[0]+`:9469"}`,
		func(s []sample) bool { return len(s) == 1 && s[0].value > before })
}
