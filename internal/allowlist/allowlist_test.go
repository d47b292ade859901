package allowlist

import (
	"net"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// namedAddr is a net.Addr of another kind, known only by its String.
type namedAddr string

func (a namedAddr) Network() string { return "x" }
func (a namedAddr) String() string  { return string(a) }

func TestPeerIP(t *testing.T) {
	for _, tc := range []struct {
		addr net.Addr
		want string // "" for no IP
	}{
		{&net.TCPAddr{IP: net.ParseIP("127.0.0.2"), Port: 1}, "127.0.0.2"}, // 16-byte form
		{&net.TCPAddr{IP: net.IPv4(10, 0, 0, 1).To4()}, "10.0.0.1"},
		{&net.UDPAddr{IP: net.ParseIP("::ffff:192.0.2.1")}, "192.0.2.1"},
		{&net.UDPAddr{IP: net.ParseIP("fe80::1"), Zone: "eth0"}, "fe80::1"},
		{&net.TCPAddr{IP: net.ParseIP("fe80::3"), Zone: "veth0"}, "fe80::3"},
		{namedAddr("[fe80::2%eth0]:5"), "fe80::2"},
		{namedAddr("[::ffff:10.9.8.7]:5"), "10.9.8.7"},
		{&net.UnixAddr{Name: "/tmp/s", Net: "unix"}, ""},
		{&net.UnixAddr{Net: "unixgram"}, ""},
		{(*net.TCPAddr)(nil), ""},
		{(*net.UDPAddr)(nil), ""},
		{&net.TCPAddr{}, ""},
		{nil, ""},
		{namedAddr("pipe"), ""},
	} {
		ip, ok := PeerIP(tc.addr)
		if tc.want == "" {
			assert.False(t, ok, "%#v", tc.addr)
			continue
		}
		require.True(t, ok, "%#v", tc.addr)
		assert.Equal(t, netip.MustParseAddr(tc.want), ip, "%#v", tc.addr)
	}
}

func TestNormalizeAndAdmits(t *testing.T) {
	in := []netip.Prefix{netip.MustParsePrefix("::ffff:10.1.0.0/112"), netip.MustParsePrefix("192.0.2.7/24"), netip.MustParsePrefix("fe80::/10")}
	list, err := Normalize(in)
	require.NoError(t, err)
	assert.Equal(t, []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16"), netip.MustParsePrefix("192.0.2.0/24"), netip.MustParsePrefix("fe80::/10")}, list)
	in[0] = netip.MustParsePrefix("0.0.0.0/0")
	assert.Equal(t, netip.MustParsePrefix("10.1.0.0/16"), list[0], "a copy, not the caller's slice")
	for addr, want := range map[net.Addr]bool{
		&net.TCPAddr{IP: net.ParseIP("10.1.2.3")}:               true,
		&net.TCPAddr{IP: net.ParseIP("::ffff:10.1.2.3")}:        true,
		&net.UDPAddr{IP: net.ParseIP("192.0.2.200")}:            true,
		&net.TCPAddr{IP: net.ParseIP("fe80::9"), Zone: "veth0"}: true,
		&net.TCPAddr{IP: net.ParseIP("10.2.0.1")}:               false,
		&net.UDPAddr{IP: net.ParseIP("::1")}:                    false,
		&net.UnixAddr{Name: "/tmp/s", Net: "unix"}:              false,
	} {
		ip, ok := PeerIP(addr)
		assert.Equal(t, want, Admits(list, ip, ok), "%v", addr)
	}
	assert.True(t, Admits(nil, netip.Addr{}, false), "without an allow-list every peer is served")

	_, err = Normalize([]netip.Prefix{{}})
	assert.ErrorContains(t, err, "invalid prefix")
	empty, err := Normalize(nil)
	assert.NoError(t, err)
	assert.Nil(t, empty)
}
