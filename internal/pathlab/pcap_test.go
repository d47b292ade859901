package pathlab

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// labPackets are a capture's worth of the kinds ReadPcap keeps and leaves
// out: TCP requests and replies, a bare ACK, UDP on the same port.
var labPackets = []Packet{
	{TS: 1e9, Proto: TCP, Src: 40000, Dst: 6379, Payload: []byte("GET a")},
	{TS: 1e9 + 5e3, Proto: TCP, Src: 40001, Dst: 6379, Payload: []byte("GET b")},
	{TS: 1e9 + 10e3, Proto: TCP, Src: 6379, Dst: 40000, Payload: []byte("$1")},
	{TS: 1e9 + 12e3, Proto: TCP, Src: 6379, Dst: 40000}, // a bare ACK: no data
	{TS: 1e9 + 20e3, Proto: UDP, Src: 40001, Dst: 6379, Payload: []byte("no")},
	{TS: 2e9 + 35e3, Proto: TCP, Src: 6379, Dst: 40001, Payload: []byte("$1")},
}

func TestReadPcap(t *testing.T) {
	file := PcapFile(labPackets)
	pkts, err := ReadPcap(bytes.NewReader(file))
	require.NoError(t, err)
	want := append(append([]Packet{}, labPackets[:3]...), labPackets[4:]...)
	assert.Equal(t, want, pkts, "every packet with data, in file order; the bare ACK left out")

	_, err = ReadPcap(bytes.NewReader(file[:30]))
	assert.Error(t, err, "a record cut short")
	_, err = ReadPcap(bytes.NewReader(file[:10]))
	assert.Error(t, err, "a header cut short")
	bad := bytes.Clone(file)
	binary.LittleEndian.PutUint32(bad, 0xa1b2c3d4) // microsecond stamps
	_, err = ReadPcap(bytes.NewReader(bad))
	assert.ErrorContains(t, err, "nanosecond")
	bad = bytes.Clone(file)
	binary.LittleEndian.PutUint32(bad[20:], 113) // Linux cooked capture
	_, err = ReadPcap(bytes.NewReader(bad))
	assert.ErrorContains(t, err, "link type 113")
	bad = bytes.Clone(file)
	binary.LittleEndian.PutUint32(bad[24+8:], 1<<30) // a record larger than any snap length
	_, err = ReadPcap(bytes.NewReader(bad))
	assert.ErrorContains(t, err, "snap length")

	// The snap length cuts a payload; the IP header's total length is larger
	// than what was kept.
	cut := PcapFile([]Packet{{TS: 1, Proto: UDP, Src: 1, Dst: 2, Payload: bytes.Repeat([]byte{7}, 100)}})
	rec := cut[24:]
	binary.LittleEndian.PutUint32(rec[8:], 14+20+8+10)
	pkts, err = ReadPcap(bytes.NewReader(cut[:24+16+14+20+8+10]))
	require.NoError(t, err)
	require.Len(t, pkts, 1)
	assert.Equal(t, bytes.Repeat([]byte{7}, 10), pkts[0].Payload)
}

// FuzzReadPcap: any input is read without a panic, and what it yields is
// written back by PcapFile and read again unchanged.
func FuzzReadPcap(f *testing.F) {
	f.Add(PcapFile(labPackets))
	f.Add(PcapFile(nil))
	f.Add(PcapFile(labPackets)[:40])
	f.Add([]byte{0x4d, 0x3c, 0xb2, 0xa1})
	f.Fuzz(func(t *testing.T, b []byte) {
		pkts, err := ReadPcap(bytes.NewReader(b))
		if err != nil {
			return
		}
		for _, p := range pkts {
			require.NotEmpty(t, p.Payload)
			require.Contains(t, []uint8{TCP, UDP}, p.Proto)
		}
		// PcapFile's TCP header carries no options (the payload is the same),
		// and it writes a stamp as whole seconds and the rest: a file's
		// stamps with 2^32 seconds or more cannot be written back.
		var norm []Packet
		for _, p := range pkts {
			if p.TS >= 0 && p.TS/1e9 < 1<<32 {
				norm = append(norm, p)
			}
		}
		back, err := ReadPcap(bytes.NewReader(PcapFile(norm)))
		require.NoError(t, err)
		if len(norm) == 0 {
			require.Empty(t, back)
			return
		}
		require.Equal(t, norm, back)
	})
}
