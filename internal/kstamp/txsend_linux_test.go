//go:build linux

package kstamp

import (
	"io"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stampedIDs drains t's error queue and returns the keys of the stamps it
// holds.
func stampedIDs(t *TX) []uint32 {
	t.Drain()
	var ids []uint32
	for i := range t.ring {
		if t.have[i] {
			ids = append(ids, t.ring[i].ID)
		}
	}
	return ids
}

// Of ten sends, the five that ask for a stamp get one each, keyed by
// their own last byte (TCP) or their number among the stamped datagrams
// (UDP); the others get none.
func TestPerSendStampsOnlyTheSendsThatAsk(t *testing.T) {
	for _, network := range []string{"tcp", "udp"} {
		t.Run(network, func(t *testing.T) {
			var c, s net.Conn
			if network == "tcp" {
				c, s = pair(t)
			} else {
				srv, err := net.ListenPacket("udp", "127.0.0.1:0")
				require.NoError(t, err)
				t.Cleanup(func() { srv.Close() })
				c, err = net.Dial("udp", srv.LocalAddr().String())
				require.NoError(t, err)
				t.Cleanup(func() { c.Close() })
			}
			tx, err := EnablePerSend(c)
			require.NoError(t, err)
			var want, all []uint32
			for i := range 10 {
				n, id, err := tx.Write([]byte("0123456789"[:i+1]), i%2 == 1)
				require.NoError(t, err)
				assert.Equal(t, i+1, n)
				all = append(all, id)
				if i%2 == 1 {
					want = append(want, id)
				}
			}
			if network == "tcp" {
				// keys are the offsets of each send's last byte
				assert.Equal(t, []uint32{0, 2, 5, 9, 14, 20, 27, 35, 44, 54}, all)
				_, err = io.ReadFull(s, make([]byte, 55))
				require.NoError(t, err)
			} else {
				// keys number the stamped datagrams only
				assert.Equal(t, []uint32{0, 1, 2, 3, 4}, want)
			}
			assert.ElementsMatch(t, want, stampedIDs(tx))
			for _, id := range want {
				_, ok := tx.Take(id)
				assert.True(t, ok, "send keyed %d has no stamp", id)
			}
			assert.Zero(t, tx.Lost())
		})
	}
}

// Write refuses a TX that stamps every send, and an empty write sends
// nothing.
func TestPerSendWriteNeedsPerSend(t *testing.T) {
	c, _ := pair(t)
	tx, err := EnableTX(c)
	require.NoError(t, err)
	_, _, err = tx.Write([]byte("x"), true)
	assert.ErrorIs(t, err, ErrTXUnsupported)
	ps, err := EnablePerSend(c)
	require.NoError(t, err)
	n, _, err := ps.Write(nil, true)
	assert.NoError(t, err)
	assert.Zero(t, n)
	assert.Empty(t, stampedIDs(ps))
}

// Write allocates nothing, stamped or not.
func TestPerSendWriteAllocatesNothing(t *testing.T) {
	c, s := pair(t)
	go func() { _, _ = io.Copy(io.Discard, s) }()
	tx, err := EnablePerSend(c)
	require.NoError(t, err)
	b := []byte("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n")
	i := 0
	allocs := testing.AllocsPerRun(100, func() {
		i++
		_, id, _ := tx.Write(b, i%2 == 0)
		if i%2 == 0 {
			tx.Collect(id)
			tx.Take(id)
		}
	})
	assert.Zero(t, allocs)
}
