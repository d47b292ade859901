package main

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// capture builds a nanosecond pcap of iperf3 datagrams sent every 10 us
// whose arrivals are late by the given delays.
func capture(delays []uint32) []byte {
	var b bytes.Buffer
	gh := make([]byte, 24)
	binary.LittleEndian.PutUint32(gh, 0xa1b23c4d)
	binary.LittleEndian.PutUint32(gh[20:], linkEthernet)
	b.Write(gh)
	for i, d := range delays {
		usec := uint32(i * 10)
		pkt := make([]byte, 14+20+8+12)
		pkt[14] = 0x45
		binary.BigEndian.PutUint32(pkt[42:], 100)  // sec
		binary.BigEndian.PutUint32(pkt[46:], usec) // usec
		rec := make([]byte, 16)
		binary.LittleEndian.PutUint32(rec, 100)
		binary.LittleEndian.PutUint32(rec[4:], usec*1000+d)
		binary.LittleEndian.PutUint32(rec[8:], uint32(len(pkt)))
		binary.LittleEndian.PutUint32(rec[12:], uint32(len(pkt)))
		b.Write(rec)
		b.Write(pkt)
	}
	return b.Bytes()
}

func TestJitter(t *testing.T) {
	// A constant transit time has no jitter.
	n, j, err := jitter(bytes.NewReader(capture([]uint32{500, 500, 500, 500})))
	require.NoError(t, err)
	assert.Equal(t, 4, n)
	assert.Zero(t, j)

	// One 16 us change moves the running jitter by 1 us.
	_, j, err = jitter(bytes.NewReader(capture([]uint32{500, 16500})))
	require.NoError(t, err)
	assert.InDelta(t, 1e-6, j, 1e-12)

	_, _, err = jitter(bytes.NewReader([]byte("not a pcap file at all, no...")))
	assert.ErrorContains(t, err, "pcap")
	// A truncated record is an error, not a silent end.
	c := capture([]uint32{500, 500})
	_, _, err = jitter(bytes.NewReader(c[:len(c)-3]))
	assert.ErrorContains(t, err, "record")
}

func FuzzJitter(f *testing.F) {
	f.Add(capture([]uint32{500, 900, 100}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		n, j, _ := jitter(bytes.NewReader(b))
		assert.GreaterOrEqual(t, n, 0)
		assert.GreaterOrEqual(t, j, 0.0)
	})
}
