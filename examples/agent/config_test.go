package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseConfigDefaults(t *testing.T) {
	c, err := parseConfig(nil, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1:9469", c.Metrics)
	assert.Equal(t, 5201, c.IperfPort)
	assert.Equal(t, 11111, c.SockperfPort)
	assert.Equal(t, 10*time.Second, time.Duration(c.RTTEvery))
	assert.Zero(t, c.TputEvery, "throughput probes are off by default")
	assert.Empty(t, c.Peers)
	assert.Empty(t, c.Iface, "empty means the default-route interface")
}

func TestParseConfigFlags(t *testing.T) {
	c, err := parseConfig([]string{
		"-metrics", ":9999", "-iperf3-port", "5301", "-sockperf-port", "11112",
		"-peers", "10.0.0.1,10.0.0.2:6000,[2001:db8::1]:6001:12000", "-rtt-every", "200ms",
		"-tput-every", "1m", "-iface", "ens5", "-cache", "c1:6379,c2:6380", "-tput-budget", "1000", "-tput-bytes", "500",
	}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, ":9999", c.Metrics)
	assert.Equal(t, 5301, c.IperfPort)
	assert.Equal(t, 11112, c.SockperfPort)
	assert.Equal(t, []string{"10.0.0.1", "10.0.0.2:6000", "[2001:db8::1]:6001:12000"}, c.Peers)
	assert.Equal(t, 200*time.Millisecond, time.Duration(c.RTTEvery))
	assert.Equal(t, time.Minute, time.Duration(c.TputEvery))
	assert.Equal(t, "ens5", c.Iface)
	assert.Equal(t, []string{"c1:6379", "c2:6380"}, c.Cache)
	assert.Equal(t, int64(1000), c.TputBudget)
	peers, err := c.allPeers()
	require.NoError(t, err)
	assert.Equal(t, []peer{
		{"10.0.0.1", 5301, 11112}, {"10.0.0.2", 6000, 11112}, {"2001:db8::1", 6001, 12000},
	}, peers)
}

func TestParseConfigFileThenFlagsWin(t *testing.T) {
	file := filepath.Join(t.TempDir(), "agent.json")
	require.NoError(t, os.WriteFile(file, []byte(`{
		"metrics": "0.0.0.0:9469", "peers": ["a", "b:1:2"], "rtt_every": "3s",
		"tput_every": "5m", "tput_budget_bytes_per_hour": 12345, "tput_bytes": 1000, "log_format": "json"
	}`), 0o600))
	c, err := parseConfig([]string{"-config", file, "-rtt-every", "1s"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, "0.0.0.0:9469", c.Metrics)
	assert.Equal(t, []string{"a", "b:1:2"}, c.Peers)
	assert.Equal(t, time.Second, time.Duration(c.RTTEvery), "the flag wins over the file")
	assert.Equal(t, 5*time.Minute, time.Duration(c.TputEvery))
	assert.Equal(t, int64(12345), c.TputBudget)
	assert.Equal(t, "json", c.LogFormat)
	assert.Equal(t, 5201, c.IperfPort, "what neither sets keeps its default")
}

func TestParseConfigErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
		return p
	}
	for name, args := range map[string][]string{
		"unknown flag":       {"-bogus"},
		"extra argument":     {"extra"},
		"bad port":           {"-iperf3-port", "70000"},
		"negative interval":  {"-rtt-every", "-1s"},
		"tiny rtt interval":  {"-rtt-every", "1ms"},
		"bad peer port":      {"-peers", "h:99999"},
		"duplicate peer":     {"-peers", "h,h:5202"},
		"bad log level":      {"-log-level", "loud"},
		"bad log format":     {"-log-format", "xml"},
		"zero max probes":    {"-max-probes", "0"},
		"bad cache endpoint": {"-cache", "nocolon"},
		"missing file":       {"-config", filepath.Join(dir, "nope.json")},
		"unknown field":      {"-config", write("u.json", `{"metrcs": ":1"}`)},
		"bad duration":       {"-config", write("d.json", `{"rtt_every": 10}`)},
		"trailing data":      {"-config", write("t.json", `{} {}`)},
		"short tput run":     {"-tput-duration", "100ms"},
	} {
		_, err := parseConfig(args, io.Discard)
		assert.Error(t, err, name)
	}
}

func TestParsePeer(t *testing.T) {
	for in, want := range map[string]peer{
		"10.0.0.1":             {"10.0.0.1", 5201, 11111},
		"host.example":         {"host.example", 5201, 11111},
		"h:6000":               {"h", 6000, 11111},
		"h:6000:12000":         {"h", 6000, 12000},
		"h::12000":             {"h", 5201, 12000},
		"[2001:db8::1]":        {"2001:db8::1", 5201, 11111},
		"[2001:db8::1]:1:2":    {"2001:db8::1", 1, 2},
		"[fe80::1%eth0]:5202":  {"fe80::1%eth0", 5202, 11111},
		"h:":                   {"h", 5201, 11111},
		"10.0.0.1:65535:65535": {"10.0.0.1", 65535, 65535},
	} {
		got, err := parsePeer(in, 5201, 11111)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"", ":5201", "h:0", "h:x", "h:1:2:3", "[::1", "[::1]x", "h:1:70000", "a b", "[]"} {
		_, err := parsePeer(in, 5201, 11111)
		assert.Error(t, err, in)
	}
	p, err := parsePeer("[2001:db8::1]:1:2", 5201, 11111)
	require.NoError(t, err)
	assert.Equal(t, "[2001:db8::1]:2", p.sockperfAddr())
	assert.Equal(t, "[2001:db8::1]:1", p.iperfAddr())
}

func TestReadPeersFileAndMerge(t *testing.T) {
	entries, err := readPeersFile(strings.NewReader("# fleet\n10.0.0.1\n10.0.0.2:6000, 10.0.0.3 # az-b\n\n  \n"))
	require.NoError(t, err)
	assert.Equal(t, []string{"10.0.0.1", "10.0.0.2:6000", "10.0.0.3"}, entries)

	file := filepath.Join(t.TempDir(), "peers")
	require.NoError(t, os.WriteFile(file, []byte("10.0.0.1:7000\n10.0.0.9\n"), 0o600))
	c, err := parseConfig([]string{"-peers", "10.0.0.1", "-peers-file", file}, io.Discard)
	require.NoError(t, err)
	peers, err := c.allPeers()
	require.NoError(t, err)
	assert.Equal(t, []peer{{"10.0.0.1", 5201, 11111}, {"10.0.0.9", 5201, 11111}}, peers,
		"a host in both the flag and the file is probed once, as the flag says")

	require.NoError(t, os.WriteFile(file, []byte("bad:port:x\n"), 0o600))
	_, err = c.allPeers()
	assert.Error(t, err)
	c.PeersFile = filepath.Join(t.TempDir(), "missing")
	_, err = c.allPeers()
	assert.Error(t, err)
}

const procRoute = `Iface	Destination	Gateway 	Flags	RefCnt	Use	Metric	Mask		MTU	Window	IRTT
ens6	00000000	0100000A	0003	0	0	200	00000000	0	0	0
ens5	00000000	0101A8C0	0003	0	0	100	00000000	0	0	0
ens5	0001A8C0	00000000	0001	0	0	100	00FFFFFF	0	0	0
down0	00000000	0100000A	0002	0	0	1	00000000	0	0	0
`

func TestDefaultRouteIface(t *testing.T) {
	iface, err := defaultRouteIface(strings.NewReader(procRoute))
	require.NoError(t, err)
	assert.Equal(t, "ens5", iface, "lowest metric among the up default routes")

	_, err = defaultRouteIface(strings.NewReader("Iface\tDestination\n eth0 0001A8C0 0 1 0 0 0 00FFFFFF\n"))
	assert.Error(t, err)
	_, err = defaultRouteIface(strings.NewReader(""))
	assert.Error(t, err)
	_, err = defaultRouteIface(strings.NewReader("eth0 00000000 0 zz 0 0 0 00000000\n"))
	assert.Error(t, err, "unparsable flags are not a route")
}

func FuzzParsePeer(f *testing.F) {
	for _, s := range []string{"10.0.0.1", "h:1:2", "[2001:db8::1]:1:2", "h::3", "[", "]:", ":::"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := parsePeer(s, 5201, 11111)
		if err != nil {
			return
		}
		require.NotEmpty(t, p.Host)
		require.True(t, validPort(p.IperfPort, false) && validPort(p.SockperfPort, false))
		// The addresses built from a peer parse back to the same host.
		again, err := parsePeer(p.sockperfAddr(), 5201, 11111)
		require.NoError(t, err)
		require.Equal(t, p.Host, again.Host)
	})
}

func FuzzDefaultRouteIface(f *testing.F) {
	f.Add(procRoute)
	f.Add("")
	f.Add("x 00000000 0 1 0 0 -1 00000000")
	f.Fuzz(func(t *testing.T, s string) {
		iface, err := defaultRouteIface(strings.NewReader(s))
		if err == nil {
			require.NotEmpty(t, iface)
			require.Contains(t, s, iface)
		}
	})
}

func FuzzDecodeConfig(f *testing.F) {
	f.Add(`{"metrics": ":1", "peers": ["a"], "rtt_every": "1s"}`)
	f.Add(`{"rtt_every": 5}`)
	f.Add(`[]`)
	f.Fuzz(func(t *testing.T, s string) {
		c := defaults()
		if err := decodeConfig([]byte(s), &c); err != nil {
			return
		}
		_ = c.validate() // must not panic whatever the file holds
	})
}

func FuzzReadPeersFile(f *testing.F) {
	f.Add("# fleet\n10.0.0.1\n10.0.0.2:6000, 10.0.0.3 # az-b\n")
	f.Add("[::1]:1:2\n\n#\n")
	f.Fuzz(func(t *testing.T, s string) {
		entries, err := readPeersFile(strings.NewReader(s))
		if err != nil {
			return // a line longer than the scanner's buffer
		}
		for _, e := range entries {
			require.NotEmpty(t, e)
			require.NotContains(t, e, "#")
			require.NotContains(t, e, ",")
		}
		_, _ = parsePeers(entries, 5201, 11111) // must not panic
	})
}

func TestListFlagsAppend(t *testing.T) {
	c, err := parseConfig([]string{"-peers", "a", "-peers", "b,c", "-cache", "c1:1", "-cache", "c2:2",
		"-allow-clients", "10.0.0.0/8", "-allow-clients", "192.168.0.0/16"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "c"}, c.Peers, "a repeated -peers adds to the list")
	assert.Equal(t, []string{"c1:1", "c2:2"}, c.Cache)
	assert.Equal(t, []string{"10.0.0.0/8", "192.168.0.0/16"}, c.AllowClients)

	// On the command line the list replaces the file's; repeats still add.
	file := filepath.Join(t.TempDir(), "agent.json")
	require.NoError(t, os.WriteFile(file, []byte(`{"peers": ["f1", "f2"]}`), 0o600))
	c, err = parseConfig([]string{"-config", file, "-peers", "a", "-peers", "b"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b"}, c.Peers)
	c, err = parseConfig([]string{"-config", file}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, []string{"f1", "f2"}, c.Peers)
}

func TestTputBytesWithinBudget(t *testing.T) {
	_, err := parseConfig([]string{"-tput-every", "1m", "-tput-bytes", "2000", "-tput-budget", "1000"}, io.Discard)
	require.Error(t, err, "a probe larger than the budget would be skipped forever")
	assert.Contains(t, err.Error(), "-tput-budget")
	_, err = parseConfig([]string{"-tput-every", "1m", "-tput-budget", "0"}, io.Discard)
	require.Error(t, err, "a zero budget allows no probe")
	_, err = parseConfig([]string{"-tput-every", "1m", "-tput-bytes", "1000", "-tput-budget", "1000"}, io.Discard)
	require.NoError(t, err)
	_, err = parseConfig([]string{"-tput-bytes", "2000", "-tput-budget", "1000"}, io.Discard)
	require.NoError(t, err, "throughput probes off: the budget does not matter")
}

func TestRTTReplyTimeout(t *testing.T) {
	c, err := parseConfig([]string{"-rtt-count", "1000", "-probe-timeout", "5s"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, time.Second, rttReplyTimeout(c), "each reply gets its own bound, not a share of the probe's")
	c, err = parseConfig([]string{"-rtt-count", "1000", "-probe-timeout", "300ms"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 300*time.Millisecond, rttReplyTimeout(c))
}

func TestMetricsAddr(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "127.0.0.1:9469"},
		{[]string{"-metrics", ":9469"}, ":9469"},
		{[]string{"-metrics", "[2001:db8::1]:9469"}, "[2001:db8::1]:9469"},
		{[]string{"-metrics", "9469"}, ":9469"},
		{[]string{"-metrics", "9469", "-listen", "10.0.0.5"}, "10.0.0.5:9469"},
		{[]string{"-metrics", "9469", "-listen", "2001:db8::5"}, "[2001:db8::5]:9469"},
		{[]string{"-metrics", "9469", "-listen", "[2001:db8::5]"}, "[2001:db8::5]:9469"},
		{[]string{"-metrics", "0", "-listen", "127.0.0.1"}, "127.0.0.1:0"},
	} {
		c, err := parseConfig(tc.args, io.Discard)
		require.NoError(t, err, "%q", tc.args)
		got, err := c.metricsAddr()
		require.NoError(t, err, "%q", tc.args)
		assert.Equal(t, tc.want, got, "%q", tc.args)
	}
	for _, bad := range []string{"2001:db8::5:9469", "70000", "host", "10.0.0.5"} {
		_, err := parseConfig([]string{"-metrics", bad}, io.Discard)
		assert.Error(t, err, bad)
	}
}
