//go:build linux

package kstamp

import (
	"bytes"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// echoOnce answers each request of size n on s with reply, until s ends.
func echoOnce(s net.Conn, n int, reply []byte) {
	buf := make([]byte, n)
	for {
		if _, err := io.ReadFull(s, buf); err != nil {
			return
		}
		if _, err := s.Write(reply); err != nil {
			return
		}
	}
}

// holds reports whether tx has read the stamp keyed id from the error
// queue (without reading it again).
func holds(tx *TX, id uint32) bool {
	for i := range tx.ring {
		if tx.have[i] && tx.ring[i].ID == id {
			return true
		}
	}
	return false
}

// Send delivers the request and returns once the reply can be read, which
// Read then returns; left is when the send returned. With a TX, its keys
// are Write's (the offset of each send's last byte), and a stamped send's
// stamp is taken before Send returns. Without the netpoller, or with
// neither, Send is a plain write.
func TestReaderSendThenRead(t *testing.T) {
	req, reply := []byte("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"), []byte("$1\r\nv\r\n")
	for _, tc := range []struct {
		name                  string
		netpoller, block, txs bool
	}{
		{"netpoller+tx", true, false, true}, {"netpoller", true, false, false}, {"poll+tx", false, false, true},
		{"poll", false, false, false}, {"block+tx", false, true, true}, {"block", false, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, s := pair(t)
			go echoOnce(s, len(req), reply)
			r, ok := New(c)
			require.True(t, ok)
			r.Netpoller = tc.netpoller
			if tc.block {
				require.NoError(t, r.EnableBlock())
			}
			if tc.txs {
				tx, err := EnablePerSend(c)
				require.NoError(t, err)
				r.TX = tx
			}
			buf := make([]byte, 64)
			for i := range 6 {
				var left time.Time
				before := time.Now()
				id, err := r.Send(req, i%2 == 1, &left)
				require.NoError(t, err)
				assert.False(t, left.Before(before), "left %v before the send started at %v", left, before)
				if tc.txs {
					assert.Equal(t, uint32((i+1)*len(req)-1), id, "send %d's key", i)
				}
				if tc.txs && i%2 == 1 {
					// collected by Send, before its wait: a stamp left
					// in the queue would end the wait at once
					assert.True(t, holds(r.TX, id), "send %d's stamp was not collected", i)
					_, ok := r.TX.Take(id)
					assert.True(t, ok)
				}
				n, err := r.Read(buf)
				require.NoError(t, err)
				assert.Equal(t, reply, buf[:n])
			}
			if tc.txs {
				assert.Zero(t, r.TX.Lost())
			}
		})
	}
}

// A Send whose read deadline has passed sends nothing; one whose reply
// does not come by the deadline fails with it, the request delivered; one
// on a closed connection fails.
func TestReaderSendDeadlineAndClose(t *testing.T) {
	c, s := pair(t)
	r, ok := New(c)
	require.True(t, ok)
	r.Netpoller = true
	require.NoError(t, c.SetDeadline(time.Now().Add(-time.Second)))
	_, err := r.Send([]byte("early"), false, nil)
	assert.ErrorIs(t, err, os.ErrDeadlineExceeded)
	require.NoError(t, s.SetReadDeadline(time.Now().Add(50*time.Millisecond)))
	_, err = s.Read(make([]byte, 8))
	assert.ErrorIs(t, err, os.ErrDeadlineExceeded, "the server got something")

	require.NoError(t, c.SetDeadline(time.Now().Add(50*time.Millisecond)))
	var left time.Time
	_, err = r.Send([]byte("late"), false, &left)
	assert.ErrorIs(t, err, os.ErrDeadlineExceeded)
	assert.False(t, left.IsZero(), "the send returned")
	require.NoError(t, s.SetReadDeadline(time.Now().Add(time.Second)))
	got := make([]byte, 4)
	_, err = io.ReadFull(s, got)
	require.NoError(t, err)
	assert.Equal(t, "late", string(got))

	require.NoError(t, c.Close())
	_, err = r.Send([]byte("closed"), false, nil)
	assert.Error(t, err)
}

// A send larger than the socket takes at once is finished as a write,
// waiting while the socket is full, and arrives whole; a stamped one is
// keyed, as Write keys it, by the last byte of its first system call.
func TestReaderSendFinishesALargeSend(t *testing.T) {
	for _, tc := range []struct{ txs, block bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
		txs := tc.txs
		c, s := pair(t)
		r, ok := New(c)
		require.True(t, ok)
		r.Netpoller = true
		if tc.block {
			// the socket out of the netpoller: a full socket's send
			// waits in slices of pollSlice, not for writability
			require.NoError(t, r.EnableBlock())
		}
		if txs {
			tx, err := EnablePerSend(c)
			require.NoError(t, err)
			r.TX = tx
		}
		big := bytes.Repeat([]byte("0123456789abcdef"), 1<<19) // 8 MiB
		got := make(chan []byte, 1)
		go func() {
			time.Sleep(50 * time.Millisecond) // the socket fills first
			b := make([]byte, len(big))
			_, _ = io.ReadFull(s, b)
			got <- b
		}()
		var left time.Time
		id, err := r.Send(big, true, &left)
		require.NoError(t, err)
		assert.False(t, left.IsZero())
		assert.Equal(t, big, <-got)
		if txs {
			assert.Less(t, id, uint32(len(big)))
			_, ok := r.TX.Take(id)
			assert.True(t, ok, "no stamp keyed %d", id)
		}
	}
}

// Send allocates nothing, stamped or not.
func TestReaderSendAllocatesNothing(t *testing.T) {
	req, reply := []byte("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"), []byte("$1\r\nv\r\n")
	c, s := pair(t)
	go echoOnce(s, len(req), reply)
	r, ok := New(c)
	require.True(t, ok)
	r.Netpoller = true
	tx, err := EnablePerSend(c)
	require.NoError(t, err)
	r.TX = tx
	buf := make([]byte, 64)
	var left time.Time
	i := 0
	allocs := testing.AllocsPerRun(100, func() {
		i++
		left = time.Time{}
		id, err := r.Send(req, i%2 == 0, &left)
		if err == nil && i%2 == 0 {
			tx.Take(id)
		}
		_, _ = r.Read(buf)
	})
	assert.Zero(t, allocs)
}
