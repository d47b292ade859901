//go:build linux

package kstamp

import (
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// Three 100-byte TCP sends are stamped with the offsets of their last
// bytes, in order, each between its write's start and return; a key never
// sent is counted lost.
func TestTXStampsTCPByByteOffset(t *testing.T) {
	c, s := pair(t)
	tx, err := EnableTX(c)
	require.NoError(t, err)
	t.Logf("SOF_TIMESTAMPING_OPT_ID_TCP: %v", tx.KeysFromFirstByte())
	var prev time.Time
	for i := range 3 {
		before := time.Now()
		_, err := c.Write(make([]byte, 100))
		require.NoError(t, err)
		after := time.Now()
		id := tx.Sent(100)
		assert.Equal(t, uint32(100*i+99), id)
		_, err = s.Read(make([]byte, 100))
		require.NoError(t, err)
		at, ok := tx.Take(id)
		require.True(t, ok, "send %d has no stamp", i)
		assert.False(t, at.Before(before.Round(0)), "stamp %v before the write began at %v", at, before)
		assert.False(t, at.After(after.Round(0)), "stamp %v after the write returned at %v", at, after)
		assert.True(t, at.After(prev))
		prev = at
	}
	_, ok := tx.Take(12345)
	assert.False(t, ok)
	assert.Equal(t, int64(1), tx.Lost())
	assert.Equal(t, int64(4), tx.Taken())
}

// UDP stamps are keyed by datagram; stamps left in the queue are kept
// for a later Take, and a Reader that polls drains them instead of
// spinning on POLLERR.
func TestTXStampsUDPByDatagram(t *testing.T) {
	srv, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	defer srv.Close()
	c, err := net.Dial("udp", srv.LocalAddr().String())
	require.NoError(t, err)
	defer c.Close()
	tx, err := EnableTX(c)
	require.NoError(t, err)
	r, ok := New(c)
	require.True(t, ok)
	r.TX = tx
	var ids []uint32
	for range 3 {
		_, err := c.Write([]byte("ping"))
		require.NoError(t, err)
		ids = append(ids, tx.Sent(4))
	}
	assert.Equal(t, []uint32{0, 1, 2}, ids)
	// The stamps wait in the error queue while the Reader polls for
	// the reply.
	go func() {
		time.Sleep(30 * time.Millisecond)
		b := make([]byte, 16)
		_, from, err := srv.ReadFrom(b)
		if err == nil {
			_, _ = srv.WriteTo([]byte("pong"), from)
		}
	}()
	n, err := r.Read(make([]byte, 16))
	require.NoError(t, err)
	assert.Equal(t, 4, n)
	var prev time.Time
	for _, id := range ids {
		at, ok := tx.Take(id)
		require.True(t, ok, "datagram %d has no stamp", id)
		assert.True(t, at.After(prev))
		assert.True(t, r.Arrived().After(at), "the reply arrived %v, before request %d's stamp %v", r.Arrived(), id, at)
		prev = at
	}
	assert.Zero(t, tx.Lost())
}

func TestEnableTXRefusesWhatHasNoSocket(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	_, err := EnableTX(a)
	assert.ErrorIs(t, err, ErrTXUnsupported)
	_, err = EnableTX(nil)
	assert.ErrorIs(t, err, ErrTXUnsupported)
}

// cmsg builds one control message as the kernel lays it out.
func cmsg(level, typ int32, data []byte) []byte {
	b := make([]byte, unix.CmsgSpace(len(data)))
	h := (*unix.Cmsghdr)(unsafePointer(&b[0]))
	h.Level, h.Type = level, typ
	h.SetLen(unix.CmsgLen(len(data)))
	copy(b[unix.CmsgLen(0):], data)
	return b
}

// txMessage builds an error-queue message's control messages: the stamp
// at (software entry) and the extended error with key id.
func txMessage(at time.Time, id, kind uint32, v6 bool) []byte {
	ts := make([]byte, 3*timespecLen)
	binary.NativeEndian.PutUint64(ts[0:], uint64(at.Unix()))
	binary.NativeEndian.PutUint64(ts[8:], uint64(at.Nanosecond()))
	ee := make([]byte, extErrLen+16)
	binary.NativeEndian.PutUint32(ee[0:], uint32(unix.ENOMSG))
	ee[4] = unix.SO_EE_ORIGIN_TIMESTAMPING
	binary.NativeEndian.PutUint32(ee[8:], kind)
	binary.NativeEndian.PutUint32(ee[12:], id)
	level, typ := int32(unix.SOL_IP), int32(unix.IP_RECVERR)
	if v6 {
		level, typ = unix.SOL_IPV6, unix.IPV6_RECVERR
	}
	return append(cmsg(unix.SOL_SOCKET, unix.SCM_TIMESTAMPING, ts), cmsg(level, typ, ee)...)
}

func TestParseTX(t *testing.T) {
	at := time.Unix(1700000000, 123456789)
	for _, v6 := range []bool{false, true} {
		st, err := ParseTX(txMessage(at, 299, unix.SCM_TSTAMP_SND, v6))
		require.NoError(t, err)
		assert.Equal(t, TXStamp{ID: 299, Kind: unix.SCM_TSTAMP_SND, At: at}, st)
	}
	full := txMessage(at, 7, 0, false)
	_, err := ParseTX(full[:unix.CmsgSpace(3*timespecLen)])
	assert.ErrorIs(t, err, ErrNotStamp, "a stamp without its key")
	_, err = ParseTX(full[unix.CmsgSpace(3*timespecLen):])
	assert.ErrorIs(t, err, ErrNotStamp, "a key without its stamp")
	_, err = ParseTX(full[:len(full)-20])
	assert.Error(t, err, "cut short")
	_, err = ParseTX(full[:5])
	assert.Error(t, err)
	icmp := txMessage(at, 7, 0, false)
	icmp[unix.CmsgSpace(3*timespecLen)+unix.CmsgLen(0)+4] = unix.SO_EE_ORIGIN_ICMP
	_, err = ParseTX(icmp)
	assert.ErrorIs(t, err, ErrNotStamp, "an ICMP error")
	_, err = ParseTX(nil)
	assert.ErrorIs(t, err, ErrNotStamp)
}

func FuzzParseTX(f *testing.F) {
	f.Add(txMessage(time.Unix(1, 2), 99, 0, false), int64(1), uint32(99))
	f.Add(txMessage(time.Unix(1700000000, 999999999), 0, 0, true), int64(5e17), uint32(0))
	f.Add([]byte{}, int64(0), uint32(0))
	f.Add(make([]byte, 40), int64(0), uint32(0))
	f.Fuzz(func(t *testing.T, oob []byte, ns int64, id uint32) {
		_, _ = ParseTX(oob)
		// Round trip: what the kernel would write reads back.
		at := time.Unix(0, ns&(1<<62-1))
		st, err := ParseTX(txMessage(at, id, 0, ns&1 == 1))
		require.NoError(t, err)
		assert.Equal(t, id, st.ID)
		assert.True(t, at.Equal(st.At))
	})
}

// A full error queue drops stamps: 50 sends with no drain between them
// all keep their stamps with the default receive buffer, and lose most
// with the kernel's smallest; Take counts each one missing as lost.
func TestTXCountsStampsTheQueueDropped(t *testing.T) {
	srv, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	defer srv.Close()
	for _, small := range []bool{false, true} {
		c, err := net.Dial("udp", srv.LocalAddr().String())
		require.NoError(t, err)
		defer c.Close()
		if small {
			require.NoError(t, c.(*net.UDPConn).SetReadBuffer(1)) // the kernel's minimum
		}
		tx, err := EnableTX(c)
		require.NoError(t, err)
		var ids []uint32
		for range 50 {
			_, err := c.Write([]byte("x"))
			require.NoError(t, err)
			ids = append(ids, tx.Sent(1))
		}
		found := 0
		for _, id := range ids {
			if _, ok := tx.Take(id); ok {
				found++
			}
		}
		t.Logf("small buffer %v: %d of 50 stamps kept", small, found)
		assert.Equal(t, int64(50), int64(found)+tx.Lost())
		assert.Equal(t, int64(50), tx.Taken())
		if small {
			assert.Positive(t, tx.Lost(), "a full error queue drops stamps")
		} else {
			assert.Zero(t, tx.Lost())
		}
	}
}
