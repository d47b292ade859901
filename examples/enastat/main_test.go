package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/netperfkit/netperfkit/ethtool"
	"github.com/netperfkit/netperfkit/ethtool/ethtooltest"
	"github.com/netperfkit/netperfkit/internal/peertest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func fixture(name string) string { return filepath.Join("..", "..", "ethtool", "testdata", name) }

func runArgs(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{
		{}, {"-watch", "1s", "-f", "x"}, {"-i", "eth0", "-prom", "-json"}, {"-i", "eth0", "extra"}, {"-i", "eth0", "-n", "-1"}, {"-bogus"},
	} {
		code, _, stderr := runArgs(t, args...)
		assert.Equal(t, 2, code, "%v", args)
		assert.NotEmpty(t, stderr, "%v", args)
	}
}

// TestUsageIgnoredFlags: a flag the mode would ignore is refused, not
// dropped silently.
func TestUsageIgnoredFlags(t *testing.T) {
	// No such interface: the usage error must come before any read (and a
	// wrongly accepted -watch ends at once instead of watching eth0).
	const iface = "npk-none0"
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"-i", iface, "-watch", "1s", "-prom"}, "-watch excludes -prom and -queues"},
		{[]string{"-i", iface, "-watch", "1s", "-queues"}, "-watch excludes -prom and -queues"},
		{[]string{"-i", iface, "-n", "3"}, "-n needs -watch"},
		{[]string{"-i", iface, "-n", "0"}, "-n needs -watch"},
		{[]string{"-f", fixture("veth.txt"), "-n", "2"}, "-n needs -watch"},
	} {
		code, out, stderr := runArgs(t, c.args...)
		assert.Equal(t, 2, code, "%v", c.args)
		assert.Contains(t, stderr, c.msg, "%v", c.args)
		assert.Empty(t, out, "%v", c.args)
	}
	_, err := parseFlags([]string{"-i", "eth0", "-watch", "1s", "-n", "3", "-json"}, io.Discard)
	assert.NoError(t, err)
}

func TestFileJSON(t *testing.T) {
	code, out, stderr := runArgs(t, "-f", fixture("ena-2.17-same-az-after.txt"), "-i", "eth0", "-json")
	require.Equal(t, 0, code, stderr)
	var got struct {
		Interface string            `json:"interface"`
		Driver    string            `json:"driver"`
		Stats     map[string]uint64 `json:"stats"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	assert.Equal(t, "eth0", got.Interface)
	assert.Len(t, got.Stats, 335)
	assert.Equal(t, uint64(1232525165), got.Stats["ena_srd_tx_pkts"])
	assert.Contains(t, out, `"ena_srd_mode":3`, "values are JSON numbers")

	// The JSON snapshot reads back with -f.
	tmp := filepath.Join(t.TempDir(), "snap.json")
	require.NoError(t, os.WriteFile(tmp, []byte(out), 0o644))
	code, out2, _ := runArgs(t, "-f", tmp, "-json")
	require.Equal(t, 0, code)
	assert.JSONEq(t, out, out2)
}

func TestFileText(t *testing.T) {
	code, out, _ := runArgs(t, "-f", fixture("ena-2.17-cross-az-after.txt"))
	require.Equal(t, 0, code)
	assert.Contains(t, out, "NIC statistics of (saved):\n     total_resets: 0\n")
	assert.Contains(t, out, "allowance exceeded: bw_in 0, bw_out 0, pps 1234, conntrack 0, linklocal 0\n")
	assert.Contains(t, out, "conntrack allowance available: 136781\n")
	assert.Contains(t, out, "ENA Express: ena_srd_mode 3, tx 1257059486, eligible tx 1257059589")

	code, out, _ = runArgs(t, "-f", fixture("ena-upstream.txt"), "-queues")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "  queue 2 xdp_tx:")
	assert.Contains(t, out, "  total tx (2 queues): cnt=")
	assert.Contains(t, out, "no ENA Express (SRD) statistics")

	code, out, _ = runArgs(t, "-f", fixture("ena-upstream.txt"), "-queues", "-json")
	require.Equal(t, 0, code)
	var q struct {
		Queues ethtool.QueueGroups `json:"queues"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &q))
	assert.Len(t, q.Queues.Queues, 5)
}

func TestFileProm(t *testing.T) {
	code, out, _ := runArgs(t, "-f", fixture("doc-tabs.txt"), "-i", "eth0", "-prom")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "node_ethtool_ena_srd_transmitted_pkts{device=\"eth0\"} 2.8195047e+07\n")
}

func TestFileErrors(t *testing.T) {
	code, _, stderr := runArgs(t, "-f", "/nonexistent/file")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "enastat: open /nonexistent/file")

	bad := filepath.Join(t.TempDir(), "bad.txt")
	require.NoError(t, os.WriteFile(bad, []byte("NIC statistics:\n  a: 1\n  b: x\n"), 0o644))
	code, _, stderr = runArgs(t, "-f", bad)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "line 3")

	empty := filepath.Join(t.TempDir(), "empty.txt")
	require.NoError(t, os.WriteFile(empty, []byte("no stats available\n"), 0o644))
	code, _, stderr = runArgs(t, "-f", empty)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "no statistics")
}

// runIn runs the command on a thread inside the namespace of v, so that the
// ethtool client it opens sees v's interfaces.
func runIn(t *testing.T, v *ethtooltest.Veth, args ...string) (int, string, string) {
	t.Helper()
	var code int
	var out, errb bytes.Buffer
	require.NoError(t, ethtooltest.InNetns(v.NetnsPath(), func() error {
		code = run(context.Background(), args, &out, &errb)
		return nil
	}))
	return code, out.String(), errb.String()
}

func TestLiveVeth(t *testing.T) {
	v := ethtooltest.NewVeth(t)
	bin := peertest.Binary(t, "apt-get install ethtool", "ethtool")

	code, out, stderr := runIn(t, v, "-i", v.Name, "-json")
	require.Equal(t, 0, code, stderr)
	var got struct {
		Interface string            `json:"interface"`
		Driver    string            `json:"driver"`
		Stats     map[string]uint64 `json:"stats"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	assert.Equal(t, v.Name, got.Interface)
	assert.Equal(t, "veth", got.Driver)
	assert.Equal(t, uint64(v.PeerIndex(t)), got.Stats["peer_ifindex"])
	want, err := ethtool.ParseSnapshot(bytes.NewReader(v.Exec(t, bin, "-S", v.Name)))
	require.NoError(t, err)
	require.Len(t, got.Stats, len(want.Stats))
	for _, st := range want.Stats {
		assert.Equal(t, st.Value, got.Stats[st.Name], st.Name)
	}

	code, out, stderr = runIn(t, v, "-i", v.Name, "-watch", "20ms", "-n", "2")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, 2, strings.Count(out, " "+v.Name+" over "), out)

	code, out, _ = runIn(t, v, "-i", v.Name, "-watch", "20ms", "-n", "1", "-json")
	require.Equal(t, 0, code)
	var d ethtool.Delta
	require.NoError(t, json.Unmarshal([]byte(out), &d))
	assert.Equal(t, v.Name, d.Interface)

	code, out, stderr = runIn(t, v, "-i", "lo")
	assert.Equal(t, 1, code)
	assert.Empty(t, out)
	assert.Equal(t, "enastat: ethtool: lo: interface has no driver statistics\n", stderr)

	code, _, stderr = runIn(t, v, "-i", "npk-nothere")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "no such network interface")
}
