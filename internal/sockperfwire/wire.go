// Package sockperfwire is sockperf's wire format: the 14-byte message header
// and a frame reader that splits a TCP stream into messages. It is internal:
// package latency speaks it as client and server.
package sockperfwire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// HeaderSize is the size of sockperf's message header, and so the smallest
// message sockperf's wire format allows.
const HeaderSize = 14

// MaxUDPMessageSize is the largest UDP message (the largest IPv4 UDP payload).
const MaxUDPMessageSize = 65507

// Flag bits of a sockperf message header.
const (
	// FlagClient marks a message sent by a client; servers ignore messages
	// without it and clear it in replies.
	FlagClient uint16 = 1
	// FlagPong asks the server for a reply.
	FlagPong uint16 = 2
	// FlagWarmup marks a warm-up message, which gets no reply.
	FlagWarmup uint16 = 4
)

// Header is sockperf's 14-byte message header. On the wire all fields are big
// endian: sequence number (8 bytes), flags (2), length (4).
type Header struct {
	// Seq is the sequence number; a client increments it before each send,
	// so the first message is 1.
	Seq uint64
	// Flags is a combination of FlagClient, FlagPong and FlagWarmup.
	Flags uint16
	// Length is the whole message length in bytes, header included.
	Length uint32
}

// ErrShortMessage is wrapped by decoding errors for a message shorter than
// HeaderSize or than its own Length field.
var ErrShortMessage = errors.New("sockperfwire: message shorter than its header")

// ErrBadLength is wrapped by decoding errors for a Length field below
// HeaderSize or above the allowed maximum.
var ErrBadLength = errors.New("sockperfwire: bad message length")

// Put writes h into the first HeaderSize bytes of b, which must be at least
// that long.
func (h Header) Put(b []byte) {
	_ = b[HeaderSize-1]
	binary.BigEndian.PutUint64(b[0:8], h.Seq)
	binary.BigEndian.PutUint16(b[8:10], h.Flags)
	binary.BigEndian.PutUint32(b[10:14], h.Length)
}

// AppendHeader appends the wire form of h to b.
func AppendHeader(b []byte, h Header) []byte {
	b = binary.BigEndian.AppendUint64(b, h.Seq)
	b = binary.BigEndian.AppendUint16(b, h.Flags)
	return binary.BigEndian.AppendUint32(b, h.Length)
}

// DecodeHeader decodes the header at the start of b. It checks only that b
// holds a whole header; use Validate for the length rules.
func DecodeHeader(b []byte) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, fmt.Errorf("%w: %d bytes", ErrShortMessage, len(b))
	}
	return Header{
		Seq:    binary.BigEndian.Uint64(b[0:8]),
		Flags:  binary.BigEndian.Uint16(b[8:10]),
		Length: binary.BigEndian.Uint32(b[10:14]),
	}, nil
}

// Validate checks the length field against the header size and maxLen (the
// largest message the reader accepts). The error wraps ErrBadLength.
func (h Header) Validate(maxLen int) error {
	if h.Length < HeaderSize || int64(h.Length) > int64(maxLen) {
		return fmt.Errorf("%w: %d outside %d..%d", ErrBadLength, h.Length, HeaderSize, maxLen)
	}
	return nil
}

// FrameReader splits a TCP byte stream into sockperf messages, using the
// length field of each header as the framing. It is not safe for concurrent
// use.
type FrameReader struct {
	r     io.Reader
	max   int
	buf   []byte
	start int // first unread byte
	end   int // end of buffered data
}

// NewFrameReader returns a FrameReader over r that rejects messages longer
// than maxLen bytes (at least HeaderSize).
func NewFrameReader(r io.Reader, maxLen int) *FrameReader {
	maxLen = max(maxLen, HeaderSize)
	return &FrameReader{r: r, max: maxLen, buf: make([]byte, max(2*maxLen, 4096))}
}

// Next returns the next whole message, header included, and its decoded
// header. The returned slice is valid only until the next call. At a clean end
// of stream it returns io.EOF; a stream that ends inside a message returns
// io.ErrUnexpectedEOF; a length field below HeaderSize or above the maximum
// returns an error wrapping ErrBadLength, after which the stream cannot be
// re-synchronised and should be closed. Read errors (deadlines, for example)
// are returned as they are, and Next may be called again after them.
func (f *FrameReader) Next() (Header, []byte, error) {
	if err := f.fill(HeaderSize); err != nil {
		return Header{}, nil, err
	}
	h, _ := DecodeHeader(f.buf[f.start:f.end])
	if err := h.Validate(f.max); err != nil {
		return h, nil, err
	}
	if err := f.fill(int(h.Length)); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return h, nil, err
	}
	msg := f.buf[f.start : f.start+int(h.Length)]
	f.start += int(h.Length)
	return h, msg, nil
}

// Buffered reports how many bytes are buffered but not yet returned.
func (f *FrameReader) Buffered() int { return f.end - f.start }

// Whole reports whether a complete message (or a header with a bad length) is
// buffered, so that Next would return without reading.
func (f *FrameReader) Whole() bool {
	if f.end-f.start < HeaderSize {
		return false
	}
	h, _ := DecodeHeader(f.buf[f.start:f.end])
	return h.Validate(f.max) != nil || int(h.Length) <= f.end-f.start
}

// fill makes at least n bytes available at f.buf[f.start:].
func (f *FrameReader) fill(n int) error {
	if f.end-f.start >= n {
		return nil
	}
	if f.start+n > len(f.buf) {
		copy(f.buf, f.buf[f.start:f.end])
		f.end -= f.start
		f.start = 0
	}
	for f.end-f.start < n {
		m, err := f.r.Read(f.buf[f.end:])
		f.end += m
		if f.end-f.start >= n {
			return nil
		}
		if err != nil {
			if err == io.EOF && f.end > f.start {
				return io.ErrUnexpectedEOF
			}
			return err
		}
	}
	return nil
}
