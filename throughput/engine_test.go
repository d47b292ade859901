package throughput

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// tcpPair returns both ends of a loopback TCP connection.
func tcpPair(t *testing.T) (a, b net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	acc := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		acc <- c
	}()
	a, err = net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	b = <-acc
	require.NotNil(t, b)
	t.Cleanup(func() {
		a.Close()
		b.Close()
	})
	return a, b
}

// TestStreamLoopsSeeAStopThatCameFirst covers a stop that lands before a
// stream goroutine's first deadline refresh (a loaded machine schedules
// the goroutine late): the refresh must not push the stop's past deadline
// out to IOTimeout, or the session waits that long before it closes the
// streams. A peer that never sends keeps each loop blocked.
func TestStreamLoopsSeeAStopThatCameFirst(t *testing.T) {
	for _, tc := range []struct {
		name string
		loop func(*engine, *flowStream) error
		conn func(*testing.T) net.Conn
	}{
		{"recvTCP", (*engine).recvTCP, func(t *testing.T) net.Conn { a, _ := tcpPair(t); return a }},
		{"recvUDP", (*engine).recvUDP, func(t *testing.T) net.Conn {
			c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
			require.NoError(t, err)
			t.Cleanup(func() { c.Close() })
			return c
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := withDefaults((&Config{IOTimeout: time.Hour}))
			e := newEngine(&cfg, false)
			s := &flowStream{conn: tc.conn(t)}
			e.streams = []*flowStream{s}
			e.stop() // no goroutine yet: it sets the flags and a past deadline
			done := make(chan error, 1)
			go func() { done <- tc.loop(e, s) }()
			select {
			case err := <-done:
				require.NoError(t, err)
			case <-time.After(30 * time.Second):
				t.Fatal("the loop refreshed its deadline over the stop and blocked")
			}
		})
	}
}
