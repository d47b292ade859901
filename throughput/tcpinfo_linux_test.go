package throughput

import (
	"io"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadTCPInfo checks that readTCPInfo carries the kernel's values: on a
// connection whose peer has read everything, the window it advertises, the
// congestion window, the RTT and the path MTU are all above zero.
func TestReadTCPInfo(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	done := make(chan int64, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- -1
			return
		}
		defer c.Close()
		n, _ := io.CopyN(io.Discard, c, 1<<20)
		_, _ = c.Write([]byte{1})
		done <- n
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Write(make([]byte, 1<<20))
	require.NoError(t, err)
	require.Equal(t, int64(1<<20), <-done)
	_, err = io.ReadFull(c, make([]byte, 1)) // the peer has read it all
	require.NoError(t, err)

	ti, err := readTCPInfo(c)
	require.NoError(t, err)
	assert.True(t, ti.OK)
	assert.Positive(t, ti.SndWnd, "the peer has read everything: its window is open")
	assert.Positive(t, ti.SndCwndBytes)
	assert.Positive(t, ti.RTTUs)
	assert.Positive(t, ti.PMTU)
	assert.GreaterOrEqual(t, ti.TotalRetrans, int64(0))

	_, err = readTCPInfo(&net.UDPConn{})
	assert.ErrorContains(t, err, "not a TCP connection")
}
