package cache

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The TCP_INFO that ended the engine's own connect is the causes' read of
// it, once; the next read asks the kernel, and sees the connection's
// later life (its request and reply).
func TestReadTCPInfoTakesTheConnectsOnce(t *testing.T) {
	addr := respListener(t, "tcp4", "127.0.0.1:0")
	r := newRawAddr(addr)
	require.NotNil(t, r)
	nc, _, err := r.dial(context.Background(), time.Now().Add(time.Second))
	require.NoError(t, err)
	defer nc.Close()
	fc := nc.(*fileConn)
	if !fc.hasInfo {
		t.Skip("the first connect(2) completed at once: no wait, no TCP_INFO kept")
	}
	kept := fc.info
	ti, ok := readTCPInfo(nc)
	require.True(t, ok)
	assert.Equal(t, kept, ti)
	assert.False(t, fc.hasInfo)
	assert.Positive(t, ti.size)

	_, err = nc.Write([]byte("*1\r\n$4\r\nPING\r\n"))
	require.NoError(t, err)
	_, err = nc.Read(make([]byte, 16))
	require.NoError(t, err)
	fresh, ok := readTCPInfo(nc)
	require.True(t, ok)
	assert.Equal(t, ti.size, fresh.size)

	// Any other conn is asked each time, without allocating.
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	_, ok = readTCPInfo(c)
	assert.True(t, ok)
	allocs := testing.AllocsPerRun(50, func() { readTCPInfo(c) })
	assert.LessOrEqual(t, allocs, 1.0, "SyscallConn's own, at most")
}
