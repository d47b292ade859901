package sockperfwire

import (
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHeaderWireExample(t *testing.T) {
	// The reference example: seq 1, flags 3, length 64.
	want, _ := hex.DecodeString("0000000000000001000300000040")
	h := Header{Seq: 1, Flags: FlagClient | FlagPong, Length: 64}
	b := make([]byte, HeaderSize)
	h.Put(b)
	assert.Equal(t, want, b)
	assert.Equal(t, want, AppendHeader(nil, h))
	got, err := DecodeHeader(want)
	require.NoError(t, err)
	assert.Equal(t, h, got)
}

func TestHeaderRoundTrip(t *testing.T) {
	for _, h := range []Header{
		{}, {Seq: 1<<64 - 1, Flags: 0xffff, Length: 1<<32 - 1}, {Seq: 42, Flags: FlagWarmup | FlagClient, Length: 14},
	} {
		got, err := DecodeHeader(AppendHeader([]byte{}, h))
		require.NoError(t, err)
		assert.Equal(t, h, got)
	}
	_, err := DecodeHeader(make([]byte, 13))
	assert.ErrorIs(t, err, ErrShortMessage)
}

func TestHeaderValidate(t *testing.T) {
	assert.NoError(t, Header{Length: 14}.Validate(14))
	assert.ErrorIs(t, Header{Length: 13}.Validate(100), ErrBadLength)
	assert.ErrorIs(t, Header{Length: 101}.Validate(100), ErrBadLength)
	assert.ErrorIs(t, Header{Length: 1<<32 - 1}.Validate(MaxUDPMessageSize), ErrBadLength)
}

func frames(sizes ...int) []byte {
	var b []byte
	for i, n := range sizes {
		b = AppendHeader(b, Header{Seq: uint64(i + 1), Flags: FlagClient | FlagPong, Length: uint32(n)})
		b = append(b, bytes.Repeat([]byte{byte(i)}, n-HeaderSize)...)
	}
	return b
}

func TestFrameReader(t *testing.T) {
	stream := frames(14, 64, 1000, 14, 65507)
	for name, r := range map[string]io.Reader{
		"whole":    bytes.NewReader(stream),
		"one byte": iotest.OneByteReader(bytes.NewReader(stream)),
		"half":     iotest.HalfReader(bytes.NewReader(stream)),
		"data+eof": iotest.DataErrReader(bytes.NewReader(stream)),
	} {
		t.Run(name, func(t *testing.T) {
			fr := NewFrameReader(r, MaxUDPMessageSize)
			for i, n := range []int{14, 64, 1000, 14, 65507} {
				h, msg, err := fr.Next()
				require.NoError(t, err, "frame %d", i)
				assert.Equal(t, uint64(i+1), h.Seq)
				assert.Len(t, msg, n)
				if n > HeaderSize {
					assert.Equal(t, byte(i), msg[n-1])
				}
			}
			_, _, err := fr.Next()
			assert.ErrorIs(t, err, io.EOF)
		})
	}
}

func TestFrameReaderErrors(t *testing.T) {
	// Truncated in the payload and in the header.
	fr := NewFrameReader(bytes.NewReader(frames(64)[:40]), 100)
	_, _, err := fr.Next()
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
	fr = NewFrameReader(bytes.NewReader(frames(64)[:5]), 100)
	_, _, err = fr.Next()
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
	// Lying lengths.
	for _, n := range []uint32{0, 13, 101, 1<<32 - 1} {
		b := AppendHeader(nil, Header{Seq: 1, Flags: 3, Length: n})
		fr = NewFrameReader(bytes.NewReader(append(b, make([]byte, 200)...)), 100)
		_, _, err = fr.Next()
		assert.ErrorIs(t, err, ErrBadLength, "length %d", n)
	}
	// A read error is passed through and reading can resume.
	boom := errors.New("boom")
	fr = NewFrameReader(io.MultiReader(bytes.NewReader(frames(64)[:20]), iotest.ErrReader(boom)), 100)
	_, _, err = fr.Next()
	assert.ErrorIs(t, err, boom)
}

func FuzzDecodeHeader(f *testing.F) {
	f.Add(frames(14))
	f.Add(frames(64)[:20])
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{0xff}, 14))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := DecodeHeader(b)
		if len(b) < HeaderSize {
			if !errors.Is(err, ErrShortMessage) {
				t.Fatalf("short input %d: %v", len(b), err)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		again := AppendHeader(nil, h)
		if !bytes.Equal(again, b[:HeaderSize]) {
			t.Fatalf("round trip %x != %x", again, b[:HeaderSize])
		}
		if err := h.Validate(MaxUDPMessageSize); err == nil && (h.Length < HeaderSize || h.Length > MaxUDPMessageSize) {
			t.Fatalf("validated length %d", h.Length)
		}
	})
}

func FuzzFrameReader(f *testing.F) {
	f.Add(frames(14, 64, 100), uint16(100))
	f.Add(frames(64)[:30], uint16(64))
	f.Add(AppendHeader(nil, Header{Length: 1<<32 - 1}), uint16(1000))
	f.Add(AppendHeader(nil, Header{Length: 3}), uint16(14))
	f.Fuzz(func(t *testing.T, b []byte, maxLen uint16) {
		fr := NewFrameReader(iotest.HalfReader(bytes.NewReader(b)), int(maxLen))
		consumed := 0
		for {
			h, msg, err := fr.Next()
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, ErrBadLength) {
					t.Fatalf("unexpected error %v", err)
				}
				if errors.Is(err, io.EOF) && consumed != len(b) {
					t.Fatalf("clean EOF after %d of %d bytes", consumed, len(b))
				}
				return
			}
			if int(h.Length) != len(msg) || len(msg) < HeaderSize || len(msg) > max(int(maxLen), HeaderSize) {
				t.Fatalf("frame of %d bytes, header says %d, max %d", len(msg), h.Length, maxLen)
			}
			if !bytes.Equal(msg, b[consumed:consumed+len(msg)]) {
				t.Fatal("frame bytes differ from the stream")
			}
			consumed += len(msg)
		}
	})
}
