// Package resp reads and writes the Redis serialization protocol (RESP2 and
// the RESP3 types a server may send) for package cache. It is wire plumbing,
// not public API: users measure endpoints through cache.
package resp

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// Type bytes.
const (
	Simple    = '+'
	Error     = '-'
	Integer   = ':'
	Bulk      = '$'
	Array     = '*'
	Null      = '_'
	Double    = ','
	Bool      = '#'
	BlobError = '!'
	Verbatim  = '='
	BigNumber = '('
	Map       = '%'
	Set       = '~'
	Attribute = '|'
	Push      = '>'
)

// Limits bound what a Reader accepts so that a hostile or broken peer cannot
// make it allocate without bound or recurse without end. MaxBulk, MaxElems,
// MaxDepth and MaxLine bound one string, aggregate, nesting or line; the
// per-reply budgets MaxReplyElems and MaxReplyBytes bound what one Read
// accepts in total, since per-aggregate limits alone let nesting multiply
// them (an array of 1,024 arrays of 1,024 nulls is 3 MiB on the wire and a
// million decoded values).
type Limits struct {
	MaxBulk  int // bytes in one bulk/verbatim/blob-error string
	MaxElems int // elements in one aggregate (a map counts key and value)
	MaxDepth int // nesting of aggregates
	MaxLine  int // bytes in one simple line
	// MaxReplyElems bounds the elements of one reply, every level of
	// nesting counted (a map counts key and value; attributes count). Zero
	// means DefaultLimits.MaxReplyElems.
	MaxReplyElems int
	// MaxReplyBytes bounds the bytes of one reply on the wire: every line
	// and every string with their CRLFs. Zero means
	// DefaultLimits.MaxReplyBytes.
	MaxReplyBytes int
}

// DefaultLimits are generous for replies to GET, SET, AUTH and CLUSTER SLOTS.
//
// MaxReplyElems, 1 Mi elements, is 30 times the CLUSTER SLOTS reply of a
// 1,000-node cluster (500 primaries with a replica each, every one owning
// four slot ranges: 17 elements per range with Redis 7's node metadata,
// 34,000 in all), and holds the largest reply a cluster sends with up to
// five replicas per primary and two metadata pairs per node (hostname and
// one more): 16,384 ranges of one slot each, 3 + 6 x 9 = 57 elements per
// range (933,888). A decoded element holds 72 bytes, and about as much again is
// allocated while the arrays holding it grow, so one reply allocates at
// most about 240 MiB for its elements. MaxReplyBytes, 128 MiB, holds the
// largest value a GET may return (MaxBulk) twice over.
var DefaultLimits = Limits{MaxBulk: 64 << 20, MaxElems: 1 << 20, MaxDepth: 32, MaxLine: 64 << 10,
	MaxReplyElems: 1 << 20, MaxReplyBytes: 128 << 20}

// ErrProtocol is wrapped by every malformed-reply error.
var ErrProtocol = errors.New("cache: RESP protocol error")

// ErrReplyTooLarge is wrapped by the error of a reply that exceeds
// Limits.MaxReplyElems or Limits.MaxReplyBytes. It wraps ErrProtocol: the
// connection cannot be read further.
var ErrReplyTooLarge = fmt.Errorf("%w: reply too large", ErrProtocol)

// bulkChunk is the most readBulk allocates ahead of the bytes that arrived:
// a peer announcing a 64 MiB string and sending nothing costs 64 KiB, not
// 64 MiB.
const bulkChunk = 64 << 10

// Value is one decoded RESP value. Aggregates hold their elements in Elems (a
// map or attribute as key, value, key, value...).
type Value struct {
	Type  byte
	Str   []byte // simple string, error, bulk, verbatim, double, big number
	Num   int64  // integer, bool (0/1)
	Null  bool   // RESP2 null bulk/array or RESP3 null
	Elems []Value
}

// IsError reports whether v is an error reply (simple or blob).
func (v Value) IsError() bool { return v.Type == Error || v.Type == BlobError }

// Text returns the string form of a string-like value.
func (v Value) Text() string { return string(v.Str) }

// Reader decodes RESP values from a buffered stream. Not safe for concurrent
// use.
type Reader struct {
	br  *bufio.Reader
	lim Limits
	// elems and bytes are what remains of the current reply's budgets.
	elems, bytes int
}

// NewReader returns a Reader of br within lim (a zero per-reply budget
// taking its default).
func NewReader(br *bufio.Reader, lim Limits) *Reader {
	if lim.MaxReplyElems <= 0 {
		lim.MaxReplyElems = DefaultLimits.MaxReplyElems
	}
	if lim.MaxReplyBytes <= 0 {
		lim.MaxReplyBytes = DefaultLimits.MaxReplyBytes
	}
	return &Reader{br: br, lim: lim}
}

// Read decodes the next value. An attribute preceding a value is read and
// dropped. Errors from the stream are returned as is (io.EOF,
// io.ErrUnexpectedEOF, net errors); malformed input wraps ErrProtocol, and a
// reply beyond the per-reply budgets wraps ErrReplyTooLarge too.
func (r *Reader) Read() (Value, error) {
	r.elems, r.bytes = r.lim.MaxReplyElems, r.lim.MaxReplyBytes
	return r.read(0)
}

// spend takes n bytes from the reply's byte budget.
func (r *Reader) spend(n int64) error {
	if n > int64(r.bytes) {
		return fmt.Errorf("%w: more than %d bytes in one reply", ErrReplyTooLarge, r.lim.MaxReplyBytes)
	}
	r.bytes -= int(n)
	return nil
}

func (r *Reader) read(depth int) (Value, error) {
	if depth > r.lim.MaxDepth {
		return Value{}, fmt.Errorf("%w: nesting deeper than %d", ErrProtocol, r.lim.MaxDepth)
	}
	line, err := r.line()
	if err != nil {
		return Value{}, err
	}
	if err := r.spend(int64(len(line)) + 2); err != nil {
		return Value{}, err
	}
	if len(line) == 0 {
		return Value{}, fmt.Errorf("%w: empty line", ErrProtocol)
	}
	typ, body := line[0], line[1:]
	switch typ {
	case Simple, Error, Double, BigNumber:
		return Value{Type: typ, Str: bytes.Clone(body)}, nil
	case Integer:
		n, err := parseInt(body)
		if err != nil {
			return Value{}, err
		}
		return Value{Type: typ, Num: n}, nil
	case Null:
		if len(body) != 0 {
			return Value{}, fmt.Errorf("%w: null with payload", ErrProtocol)
		}
		return Value{Type: typ, Null: true}, nil
	case Bool:
		switch string(body) {
		case "t":
			return Value{Type: typ, Num: 1}, nil
		case "f":
			return Value{Type: typ}, nil
		}
		return Value{}, fmt.Errorf("%w: bad boolean %q", ErrProtocol, body)
	case Bulk, BlobError, Verbatim:
		return r.readBulk(typ, body)
	case Array, Set, Push, Map, Attribute:
		return r.readAggregate(typ, body, depth)
	}
	return Value{}, fmt.Errorf("%w: unknown type byte %q", ErrProtocol, typ)
}

func (r *Reader) readBulk(typ byte, body []byte) (Value, error) {
	n, err := parseInt(body)
	if err != nil {
		return Value{}, err
	}
	if n == -1 && typ == Bulk {
		return Value{Type: typ, Null: true}, nil
	}
	if n < 0 || n > int64(r.lim.MaxBulk) {
		return Value{}, fmt.Errorf("%w: bulk length %d outside 0..%d", ErrProtocol, n, r.lim.MaxBulk)
	}
	if err := r.spend(n + 2); err != nil {
		return Value{}, err
	}
	// Grow as the bytes arrive rather than trusting the announced length,
	// doubling what arrived: a value costs a few copies, and a peer that
	// announces much and sends little gets at most twice what it sent
	// (bulkChunk at first) allocated ahead.
	want := int(n) + 2
	buf := make([]byte, 0, min(want, bulkChunk))
	for len(buf) < want {
		have := len(buf)
		if have == cap(buf) {
			grown := make([]byte, have, min(want, 2*have))
			copy(grown, buf)
			buf = grown
		}
		buf = buf[:cap(buf)]
		if _, err := io.ReadFull(r.br, buf[have:]); err != nil {
			return Value{}, unexpectedEOF(err)
		}
	}
	if buf[n] != '\r' || buf[n+1] != '\n' {
		return Value{}, fmt.Errorf("%w: bulk string not terminated by CRLF", ErrProtocol)
	}
	if typ == Verbatim && n < 4 {
		return Value{}, fmt.Errorf("%w: verbatim string shorter than its format prefix", ErrProtocol)
	}
	return Value{Type: typ, Str: buf[:n:n]}, nil
}

func (r *Reader) readAggregate(typ byte, body []byte, depth int) (Value, error) {
	n, err := parseInt(body)
	if err != nil {
		return Value{}, err
	}
	if n == -1 && typ == Array {
		return Value{Type: typ, Null: true}, nil
	}
	// n is bounded before it is doubled: a map of 2^62 pairs is not
	// 2^63 elements but a negative count.
	elems := n
	if n >= 0 && n <= int64(r.lim.MaxElems) && (typ == Map || typ == Attribute) {
		elems = 2 * n
	}
	if n < 0 || elems > int64(r.lim.MaxElems) {
		return Value{}, fmt.Errorf("%w: aggregate size %d outside 0..%d", ErrProtocol, n, r.lim.MaxElems)
	}
	if elems > int64(r.elems) {
		return Value{}, fmt.Errorf("%w: more than %d elements in one reply", ErrReplyTooLarge, r.lim.MaxReplyElems)
	}
	r.elems -= int(elems)
	v := Value{Type: typ}
	// Grow as elements arrive rather than trusting the announced size.
	v.Elems = make([]Value, 0, min(int(elems), 64))
	for i := int64(0); i < elems; i++ {
		e, err := r.read(depth + 1)
		if err != nil {
			return Value{}, unexpectedEOF(err)
		}
		v.Elems = append(v.Elems, e)
	}
	if typ == Attribute {
		// Counting the attribute as a level bounds chains of attributes.
		return r.read(depth + 1)
	}
	return v, nil
}

// line returns the next line without its CRLF. The slice is valid until the
// next read.
func (r *Reader) line() ([]byte, error) {
	line, err := r.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		// Long simple lines (big error messages) are rare: collect them.
		buf := bytes.Clone(line)
		for err == bufio.ErrBufferFull {
			if len(buf) > r.lim.MaxLine {
				return nil, fmt.Errorf("%w: line longer than %d bytes", ErrProtocol, r.lim.MaxLine)
			}
			line, err = r.br.ReadSlice('\n')
			buf = append(buf, line...)
		}
		line = buf
	}
	if err != nil {
		if err == io.EOF && len(line) > 0 {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	if len(line) > r.lim.MaxLine+2 {
		return nil, fmt.Errorf("%w: line longer than %d bytes", ErrProtocol, r.lim.MaxLine)
	}
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return nil, fmt.Errorf("%w: line not terminated by CRLF", ErrProtocol)
	}
	return line[:len(line)-2], nil
}

func parseInt(b []byte) (int64, error) {
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: bad number %q", ErrProtocol, b)
	}
	return n, nil
}

// unexpectedEOF turns a clean EOF in the middle of a value into
// io.ErrUnexpectedEOF.
func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// AppendCommand appends args as a RESP array of bulk strings.
func AppendCommand(dst []byte, args ...string) []byte {
	dst = append(dst, '*')
	dst = strconv.AppendInt(dst, int64(len(args)), 10)
	dst = append(dst, '\r', '\n')
	for _, a := range args {
		dst = append(dst, '$')
		dst = strconv.AppendInt(dst, int64(len(a)), 10)
		dst = append(dst, '\r', '\n')
		dst = append(dst, a...)
		dst = append(dst, '\r', '\n')
	}
	return dst
}
