package cache

import (
	"errors"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseListenDrops(t *testing.T) {
	f, err := os.Open("testdata/netstat.txt")
	require.NoError(t, err)
	defer f.Close()
	n, err := parseListenDrops(f)
	require.NoError(t, err)
	assert.Equal(t, int64(133), n, "testdata/netstat.txt: ListenOverflows and ListenDrops are 133")

	const short = "TcpExt: SyncookiesSent ListenOverflows ListenDrops\nTcpExt: 1 7 9\nIpExt: InNoRoutes\nIpExt: 0\n"
	n, err = parseListenDrops(strings.NewReader(short))
	require.NoError(t, err)
	assert.Equal(t, int64(9), n)

	for name, text := range map[string]string{
		"empty":        "",
		"no TcpExt":    "IpExt: InNoRoutes\nIpExt: 0\n",
		"no values":    "TcpExt: ListenDrops\n",
		"short values": "TcpExt: A B ListenDrops\nTcpExt: 1 2\n",
		"not a number": "TcpExt: ListenDrops\nTcpExt: x\n",
		"negative":     "TcpExt: ListenDrops\nTcpExt: -1\n",
	} {
		_, err := parseListenDrops(strings.NewReader(text))
		assert.ErrorIs(t, err, errNoListenDrops, name)
	}
}

func FuzzParseListenDrops(f *testing.F) {
	if b, err := os.ReadFile("testdata/netstat.txt"); err == nil {
		f.Add(string(b))
	}
	f.Add("TcpExt: ListenDrops\nTcpExt: 3\n")
	f.Add("TcpExt: ListenDrops\n")
	f.Add("TcpExt: A ListenDrops\nTcpExt: 1\n")
	f.Fuzz(func(t *testing.T, s string) {
		n, err := parseListenDrops(strings.NewReader(s))
		if err == nil {
			assert.GreaterOrEqual(t, n, int64(0))
			assert.Contains(t, s, "ListenDrops")
		}
	})
}

func TestIsLocalAddr(t *testing.T) {
	ifs := func() ([]net.Addr, error) {
		_, a, _ := net.ParseCIDR("198.18.0.1/30")
		a.IP = net.ParseIP("198.18.0.1")
		return []net.Addr{a, &net.IPNet{IP: net.ParseIP("2001:db8::5"), Mask: net.CIDRMask(64, 128)}}, nil
	}
	for addr, local := range map[string]bool{
		"127.0.0.1:6379":       true,
		"127.3.4.5:6379":       true,
		"[::1]:6379":           true,
		"0.0.0.0:6379":         true,
		"localhost:6379":       true,
		"LOCALHOST.:6379":      true,
		"cache.localhost:1":    true,
		"198.18.0.1:6379":      true,
		"[2001:db8::5]:6379":   true,
		"[::ffff:127.0.0.1]:1": true,
		"198.18.0.2:6379":      false,
		"cache.lab:6379":       false,
		"10.0.0.1:6379":        false,
		"bad":                  false,
	} {
		assert.Equal(t, local, isLocalAddr(addr, ifs), addr)
	}
	noIfs := func() ([]net.Addr, error) { return nil, errors.New("no netlink") }
	assert.False(t, isLocalAddr("198.18.0.1:6379", noIfs), "interfaces unknown: not local")
	assert.True(t, isLocalAddr("127.0.0.1:6379", noIfs), "loopback needs no interface list")
}

// fakeDrops is a ListenDrops counter the test moves.
type fakeDrops struct {
	n   int64
	err error
}

func (f *fakeDrops) read() (int64, error) { return f.n, f.err }

func TestListenWatch(t *testing.T) {
	assert.Nil(t, startListenWatch((&fakeDrops{err: errNoListenDrops}).read), "unreadable: no watch")
	f := &fakeDrops{n: 100}
	w := startListenWatch(f.read)
	require.NotNil(t, w)
	f.n = 114
	d, ok := w.delta()
	assert.True(t, ok)
	assert.Equal(t, int64(14), d)
	f.n = 90
	_, ok = w.delta()
	assert.False(t, ok, "a counter that went back is not a count")
	f.n, f.err = 120, errNoListenDrops
	_, ok = w.delta()
	assert.False(t, ok)
	_, ok = (*listenWatch)(nil).delta()
	assert.False(t, ok)
	assert.Nil(t, watchListen("198.51.100.7:6379"), "a remote endpoint is not watched")
}

func TestListenQueueLocalCounter(t *testing.T) {
	if _, err := os.Stat(netstatPath); err != nil {
		t.Skipf("no %s: %v", netstatPath, err)
	}
	n, err := readListenDrops()
	require.NoError(t, err)
	assert.GreaterOrEqual(t, n, int64(0))
	assert.NotNil(t, watchListen("127.0.0.1:6379"), "loopback is watched on linux")
}
