package pathlab

import (
	"io"
	"net"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBridge joins three members on one subnet: a member reaches another
// through the hub's bridge, and each routes by default through the hub.
func TestBridge(t *testing.T) {
	b := NewBridge(t, BridgeConfig{Prefix: "npk-br-" + strconv.Itoa(int(labs.Add(1))) + "-", Net: netip.MustParsePrefix("198.18.254.0/24"), Members: 3})
	require.Len(t, b.Members, 3)
	assert.Equal(t, "198.18.254.254", b.Hub.Addr.String())
	for i, m := range b.Members {
		assert.Equal(t, "198.18.254."+strconv.Itoa(i+1), m.Addr.String())
		assert.Equal(t, b.Hub.Addr, m.Peer)
		assert.Contains(t, m.Run(t, "ip", "route", "show", "default"), "via 198.18.254.254 dev eth0")
	}
	var ln net.Listener
	require.NoError(t, b.Members[0].Do(func() (err error) {
		ln, err = net.Listen("tcp", net.JoinHostPort(b.Members[0].Addr.String(), "0"))
		return err
	}))
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			_, _ = c.Write([]byte("hello"))
			_ = c.Close()
		}
	}()
	var c net.Conn
	require.NoError(t, b.Members[2].Do(func() (err error) {
		c, err = net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
		return err
	}))
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(5*time.Second)))
	got, err := io.ReadAll(c)
	require.NoError(t, err)
	assert.Equal(t, "hello", string(got))
}

func TestBridgeConfigRefused(t *testing.T) {
	for _, cfg := range []BridgeConfig{
		{Prefix: "x", Net: netip.MustParsePrefix("198.18.1.0/23"), Members: 2},
		{Prefix: "x", Net: netip.MustParsePrefix("198.18.1.0/24"), Members: 0},
		{Prefix: "x", Net: netip.MustParsePrefix("198.18.1.0/24"), Members: 254},
		{Net: netip.MustParsePrefix("198.18.1.0/24"), Members: 2},
	} {
		r := &fatalTB{TB: t}
		assert.Nil(t, NewBridge(r, cfg))
		assert.True(t, r.fatal, "%+v", cfg)
	}
}

// fatalTB records Fatalf instead of ending the test.
type fatalTB struct {
	testing.TB
	fatal bool
}

func (f *fatalTB) Helper()               {}
func (f *fatalTB) Fatalf(string, ...any) { f.fatal = true }
