//go:build linux

package ethtool

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/ethtool/ethtooltest"
	"github.com/netperfkit/netperfkit/internal/peertest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// clientIn opens a Client inside the namespace at path.
func clientIn(t testing.TB, path string) *Client {
	t.Helper()
	var c *Client
	require.NoError(t, ethtooltest.InNetns(path, func() error {
		var err error
		c, err = New()
		return err
	}))
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestClientVethMatchesEthtoolBinary(t *testing.T) {
	v := ethtooltest.NewVeth(t)
	bin := peertest.Binary(t, "apt-get install ethtool", "ethtool")
	c := clientIn(t, v.NetnsPath())

	got, err := c.readStats(v.Name)
	require.NoError(t, err)
	want, err := parseStats(bytes.NewReader(v.Exec(t, bin, "-S", v.Name)))
	require.NoError(t, err)
	assert.Equal(t, want, got)

	idx, ok := got.Get("peer_ifindex")
	require.True(t, ok, "veth reports peer_ifindex")
	assert.Equal(t, uint64(v.PeerIndex(t)), idx)

	di, err := c.c.driverInfo(v.Name)
	require.NoError(t, err)
	assert.Equal(t, "veth", di.Driver)
	assert.Contains(t, string(v.Exec(t, bin, "-i", v.Name)), "driver: "+di.Driver+"\n")
	assert.Equal(t, uint32(len(got)), di.NStats)

	snap, err := c.Snapshot(v.Name)
	require.NoError(t, err)
	assert.Equal(t, v.Name, snap.Interface)
	assert.Equal(t, "veth", snap.Driver)
	assert.False(t, snap.Time.IsZero())
	assert.Equal(t, get(got, "peer_ifindex"), get(snap.Stats, "peer_ifindex"))

	// The peer's end, read from its own namespace, points back at ours.
	pc := clientIn(t, v.PeerNetnsPath())
	ps, err := pc.readStats(v.PeerName)
	require.NoError(t, err)
	ourIdx := strings.TrimSpace(string(v.Exec(t, "cat", "/sys/class/net/"+v.Name+"/ifindex")))
	pidx, _ := ps.Get("peer_ifindex")
	assert.Equal(t, ourIdx, uitoa(pidx))
}

func TestClientErrors(t *testing.T) {
	v := ethtooltest.NewVeth(t)
	c := clientIn(t, v.NetnsPath())

	_, err := c.readStats("lo")
	require.Error(t, err)
	assert.ErrorIs(t, err, os.ErrNotExist)
	assert.ErrorIs(t, err, ErrNoStats)
	assert.NotErrorIs(t, err, ErrNoInterface)
	assert.Equal(t, "ethtool: lo: interface has no driver statistics", err.Error())

	_, err = c.readStats("npk-missing0")
	require.Error(t, err)
	assert.ErrorIs(t, err, os.ErrNotExist)
	assert.ErrorIs(t, err, ErrNoInterface)
	assert.Equal(t, "ethtool: npk-missing0: no such network interface", err.Error())

	_, err = c.c.driverInfo("npk-missing0")
	assert.ErrorIs(t, err, ErrNoInterface)
	_, err = c.readStats("an-interface-name-too-long")
	assert.ErrorIs(t, err, ErrNoInterface)
	assert.Equal(t, `ethtool: "an-interface-name-too-long": no such network interface (a name has at most 15 bytes)`, err.Error())
	_, err = ReadSnapshot("")
	assert.ErrorIs(t, err, ErrNoInterface)
	assert.Equal(t, "ethtool: no interface named: the interface name is empty", err.Error())
	_, err = c.Snapshot("lo")
	assert.ErrorIs(t, err, os.ErrNotExist)

	// veth has no ring parameters.
	_, err = c.RingParams(v.Name)
	assert.ErrorIs(t, err, os.ErrNotExist)
	var e *opError
	require.ErrorAs(t, err, &e)
	assert.Equal(t, "GRINGPARAM", e.op)

	require.NoError(t, c.Close())
	_, err = c.readStats(v.Name)
	assert.Error(t, err)
}

func TestClientStatsReusesBuffers(t *testing.T) {
	v := ethtooltest.NewVeth(t)
	c := clientIn(t, v.NetnsPath())
	dst, err := c.c.stats(v.Name, nil)
	require.NoError(t, err)
	allocs := testing.AllocsPerRun(50, func() {
		dst, err = c.c.stats(v.Name, dst[:0])
	})
	require.NoError(t, err)
	assert.Zero(t, allocs, "a repeated read of the same interface into a reused slice allocates nothing")
}

func TestClientWatchVeth(t *testing.T) {
	v := ethtooltest.NewVeth(t)
	c := clientIn(t, v.NetnsPath())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var got []*Delta
	err := c.Watch(ctx, v.Name, &WatchConfig{Interval: 10 * time.Millisecond, OnDelta: func(d Delta) {
		got = append(got, d.Clone())
		if len(got) == 3 {
			cancel()
		}
	}})
	require.ErrorIs(t, err, context.Canceled)
	require.Len(t, got, 3)
	for _, d := range got {
		assert.Equal(t, v.Name, d.Interface)
		assert.Equal(t, "veth", d.Driver)
		assert.Positive(t, d.Duration)
		idx, ok := d.Get("peer_ifindex")
		require.True(t, ok)
		assert.True(t, idx.Gauge)
		assert.Equal(t, uint64(v.PeerIndex(t)), idx.After)
	}
	assert.True(t, got[1].From.Equal(got[0].To), "each window starts where the previous ended")

	err = c.Watch(context.Background(), "lo", &WatchConfig{Interval: time.Millisecond})
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// TestClientIFBCountsTraffic reads counters that really move: an ifb device
// counting every packet received on its namespace's loopback.
func TestClientIFBCountsTraffic(t *testing.T) {
	f := ethtooltest.NewIFB(t)
	bin := peertest.Binary(t, "apt-get install ethtool", "ethtool")
	c := clientIn(t, f.NetnsPath())

	before, err := c.Snapshot(f.Name)
	require.NoError(t, err)
	assert.Equal(t, "ifb", before.Driver)
	const n, size = 500, 100
	f.SendUDP(t, n, size)
	after, err := c.Snapshot(f.Name)
	require.NoError(t, err)

	d := mustDiff(t, before, after)
	pkts := increase(d, "rx_queue_0_packets")
	assert.GreaterOrEqual(t, pkts, uint64(n))
	assert.LessOrEqual(t, pkts, uint64(n+10), "only our datagrams cross lo in a fresh namespace")
	assert.GreaterOrEqual(t, increase(d, "rx_queue_0_bytes"), uint64(n*(size+8+20)))
	assert.Zero(t, d.Resets)
	g := GroupQueues(d.increases())
	total, ok := g.Total("rx", "packets")
	require.True(t, ok)
	assert.Equal(t, pkts, total)

	// The binary, run after, sees at least what we saw.
	out := ethtoolIn(t, f.NetnsPath(), bin, f.Name)
	bin1, _ := out.Get("rx_queue_0_packets")
	assert.GreaterOrEqual(t, bin1, get(after.Stats, "rx_queue_0_packets"))

	// Watch's windows add up to the whole: no count lost or doubled
	// between consecutive deltas. Watch stops itself once it has seen the
	// 500 datagrams sent while it runs.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	target := get(after.Stats, "rx_queue_0_packets") + 500
	var sum, first, last uint64
	windows := 0
	done := make(chan error, 1)
	go func() {
		done <- c.Watch(ctx, f.Name, &WatchConfig{Interval: 5 * time.Millisecond, OnDelta: func(d Delta) {
			cn, _ := d.Get("rx_queue_0_packets")
			if windows == 0 {
				first = cn.Before
			}
			windows++
			sum += cn.Increase
			last = cn.After
			if last >= target {
				cancel()
			}
		}})
	}()
	for range 10 {
		f.SendUDP(t, 50, 64)
		time.Sleep(10 * time.Millisecond)
	}
	require.ErrorIs(t, <-done, context.Canceled)
	require.GreaterOrEqual(t, last, target, "Watch saw the datagrams before the 10 s timeout")
	assert.Equal(t, last-first, sum)
	assert.Greater(t, windows, 1)
}

// ethtoolIn runs the ethtool binary from a thread inside the namespace.
func ethtoolIn(t *testing.T, path, bin, iface string) Stats {
	t.Helper()
	var out []byte
	require.NoError(t, ethtooltest.InNetns(path, func() error {
		var err error
		out, err = exec.Command(bin, "-S", iface).Output()
		return err
	}))
	s, err := parseStats(bytes.NewReader(out))
	require.NoError(t, err)
	return s
}

func TestReadOnce(t *testing.T) {
	_, err := ReadSnapshot("lo")
	require.ErrorIs(t, err, os.ErrNotExist, "lo has no statistics")
	require.ErrorIs(t, err, ErrNoStats)
	c, err := New()
	require.NoError(t, err)
	defer c.Close()
	_, err = c.RingParams("no-such-if0")
	require.ErrorIs(t, err, os.ErrNotExist)
	require.ErrorIs(t, err, ErrNoInterface)
}

// get is s.Get's value, 0 when absent.
func get(s Stats, name string) uint64 {
	v, _ := s.Get(name)
	return v
}
