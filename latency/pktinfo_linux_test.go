//go:build linux

package latency

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// pktinfoCmsg builds one control message as the kernel writes it.
func pktinfoCmsg(level, typ int32, data []byte) []byte {
	b := putCmsgHeader(make([]byte, unix.CmsgSpace(len(data))), level, typ, len(data))
	copy(b[unix.CmsgLen(0):], data)
	return b
}

func TestParsePktinfo(t *testing.T) {
	v6 := make([]byte, unix.SizeofInet6Pktinfo)
	copy(v6, netip.MustParseAddr("::ffff:198.18.0.9").AsSlice())
	v4 := make([]byte, unix.SizeofInet4Pktinfo)
	copy(v4[4:8], []byte{198, 18, 0, 9}) // ipi_spec_dst
	copy(v4[8:12], []byte{198, 18, 0, 1})
	stamp := pktinfoCmsg(unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, make([]byte, 16))
	for name, tc := range map[string]struct {
		oob  []byte
		want string
	}{
		"ipv6":                 {pktinfoCmsg(unix.IPPROTO_IPV6, unix.IPV6_PKTINFO, v6), "::ffff:198.18.0.9"},
		"ipv4 spec_dst":        {pktinfoCmsg(unix.IPPROTO_IP, unix.IP_PKTINFO, v4), "198.18.0.9"},
		"after a stamp":        {append(stamp, pktinfoCmsg(unix.IPPROTO_IPV6, unix.IPV6_PKTINFO, v6)...), "::ffff:198.18.0.9"},
		"none":                 {stamp, ""},
		"empty":                {nil, ""},
		"short data":           {pktinfoCmsg(unix.IPPROTO_IPV6, unix.IPV6_PKTINFO, v6[:8]), ""},
		"length beyond buffer": {pktinfoCmsg(unix.IPPROTO_IPV6, unix.IPV6_PKTINFO, v6)[:20], ""},
	} {
		got, ok := parsePktinfo(tc.oob)
		if tc.want == "" {
			assert.False(t, ok, name)
			continue
		}
		require.True(t, ok, name)
		assert.Equal(t, tc.want, got.String(), name)
	}
}

// FuzzParsePktinfo: any control buffer parses without a panic, and a
// message it finds is one of the two it looks for.
func FuzzParsePktinfo(f *testing.F) {
	v6 := make([]byte, unix.SizeofInet6Pktinfo)
	copy(v6, netip.MustParseAddr("2001:db8::1").AsSlice())
	f.Add(pktinfoCmsg(unix.IPPROTO_IPV6, unix.IPV6_PKTINFO, v6))
	f.Add(pktinfoCmsg(unix.IPPROTO_IP, unix.IP_PKTINFO, make([]byte, unix.SizeofInet4Pktinfo)))
	f.Add(append(pktinfoCmsg(unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, make([]byte, 16)), pktinfoCmsg(unix.IPPROTO_IPV6, unix.IPV6_PKTINFO, v6)...))
	f.Add([]byte{})
	f.Add(make([]byte, unix.SizeofCmsghdr))
	f.Fuzz(func(t *testing.T, oob []byte) {
		a, ok := parsePktinfo(oob)
		if ok != a.IsValid() {
			t.Fatalf("ok %v with address %v", ok, a)
		}
		// What it builds, it reads back.
		if ok {
			b := pktinfoCmsg(unix.IPPROTO_IPV6, unix.IPV6_PKTINFO, append(a.AsSlice(), make([]byte, 20)...)[:20])
			if a.Is6() {
				back, ok := parsePktinfo(b)
				if !ok || back != a {
					t.Fatalf("round trip: %v -> %v", a, back)
				}
			}
		}
	})
}

// serveWildcard serves on a UDP socket of network bound to the wildcard
// address and returns its port.
func serveWildcard(t *testing.T, network string) int {
	t.Helper()
	pc, err := net.ListenPacket(network, ":0")
	require.NoError(t, err)
	s, err := NewServer(nil)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := s.ServePacket(ctx, pc); !errors.Is(err, context.Canceled) {
			t.Errorf("server: %v", err)
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
	return pc.LocalAddr().(*net.UDPAddr).Port
}

// TestServerAnswersFromAddressAsked: every address of 127.0.0.0/8 is the
// host's own, and the kernel's route answers 127.0.0.1's client from
// 127.0.0.1 whichever was asked. A server bound to the wildcard answers a
// request to 127.0.0.2 from 127.0.0.2, on Go's dual-stack socket
// ("udp") and on an IPv4 one ("udp4"), so the client's connected socket
// takes the reply (issue 41).
func TestServerAnswersFromAddressAsked(t *testing.T) {
	for _, network := range []string{"udp", "udp4"} {
		t.Run(network, func(t *testing.T) {
			port := serveWildcard(t, network)
			for _, host := range []string{"127.0.0.1", "127.0.0.2"} {
				addr := net.JoinHostPort(host, strconv.Itoa(port))
				res, err := PingPong(context.Background(), addr, &PingPongConfig{Count: 20, ReadTimeout: 2 * time.Second})
				require.NoError(t, err, addr)
				assert.Equal(t, int64(20), res.Received, addr)
			}
		})
	}
}
