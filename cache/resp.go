package cache

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// RESP type bytes (RESP2 and the RESP3 types a server may send).
const (
	respSimple    = '+'
	respError     = '-'
	respInteger   = ':'
	respBulk      = '$'
	respArray     = '*'
	respNull      = '_'
	respDouble    = ','
	respBool      = '#'
	respBlobError = '!'
	respVerbatim  = '='
	respBigNumber = '('
	respMap       = '%'
	respSet       = '~'
	respAttribute = '|'
	respPush      = '>'
)

// respLimits bound what the reader accepts so that a hostile or broken peer
// cannot make it allocate without bound or recurse without end.
type respLimits struct {
	maxBulk  int // bytes in one bulk/verbatim/blob-error string
	maxElems int // elements in one aggregate (a map counts key and value)
	maxDepth int // nesting of aggregates
	maxLine  int // bytes in one simple line
}

var defaultLimits = respLimits{maxBulk: 64 << 20, maxElems: 1 << 20, maxDepth: 32, maxLine: 64 << 10}

// errProtocol is wrapped by every malformed-reply error.
var errProtocol = errors.New("cache: RESP protocol error")

// value is one decoded RESP value. Aggregates hold their elements in elems
// (a map or attribute as key, value, key, value...).
type value struct {
	typ   byte
	str   []byte // simple string, error, bulk, verbatim, double, big number
	num   int64  // integer, bool (0/1)
	null  bool   // RESP2 null bulk/array or RESP3 null
	elems []value
}

// isError reports whether v is an error reply (simple or blob).
func (v value) isError() bool { return v.typ == respError || v.typ == respBlobError }

// text returns the string form of a string-like value.
func (v value) text() string { return string(v.str) }

// respReader decodes RESP values from a buffered stream.
type respReader struct {
	br  *bufio.Reader
	lim respLimits
}

// read decodes the next value. An attribute preceding a value is read and
// dropped. Errors from the stream are returned as is (io.EOF,
// io.ErrUnexpectedEOF, net errors); malformed input wraps errProtocol.
func (r *respReader) read() (value, error) {
	return r.readDepth(0)
}

func (r *respReader) readDepth(depth int) (value, error) {
	if depth > r.lim.maxDepth {
		return value{}, fmt.Errorf("%w: nesting deeper than %d", errProtocol, r.lim.maxDepth)
	}
	line, err := r.line()
	if err != nil {
		return value{}, err
	}
	if len(line) == 0 {
		return value{}, fmt.Errorf("%w: empty line", errProtocol)
	}
	typ, body := line[0], line[1:]
	switch typ {
	case respSimple, respError, respDouble, respBigNumber:
		return value{typ: typ, str: bytes.Clone(body)}, nil
	case respInteger:
		n, err := parseInt(body)
		if err != nil {
			return value{}, err
		}
		return value{typ: typ, num: n}, nil
	case respNull:
		if len(body) != 0 {
			return value{}, fmt.Errorf("%w: null with payload", errProtocol)
		}
		return value{typ: typ, null: true}, nil
	case respBool:
		switch string(body) {
		case "t":
			return value{typ: typ, num: 1}, nil
		case "f":
			return value{typ: typ}, nil
		}
		return value{}, fmt.Errorf("%w: bad boolean %q", errProtocol, body)
	case respBulk, respBlobError, respVerbatim:
		n, err := parseInt(body)
		if err != nil {
			return value{}, err
		}
		if n == -1 && typ == respBulk {
			return value{typ: typ, null: true}, nil
		}
		if n < 0 || n > int64(r.lim.maxBulk) {
			return value{}, fmt.Errorf("%w: bulk length %d outside 0..%d", errProtocol, n, r.lim.maxBulk)
		}
		buf := make([]byte, int(n)+2)
		if _, err := io.ReadFull(r.br, buf); err != nil {
			return value{}, unexpectedEOF(err)
		}
		if buf[n] != '\r' || buf[n+1] != '\n' {
			return value{}, fmt.Errorf("%w: bulk string not terminated by CRLF", errProtocol)
		}
		if typ == respVerbatim && n < 4 {
			return value{}, fmt.Errorf("%w: verbatim string shorter than its format prefix", errProtocol)
		}
		return value{typ: typ, str: buf[:n:n]}, nil
	case respArray, respSet, respPush, respMap, respAttribute:
		n, err := parseInt(body)
		if err != nil {
			return value{}, err
		}
		if n == -1 && typ == respArray {
			return value{typ: typ, null: true}, nil
		}
		elems := n
		if typ == respMap || typ == respAttribute {
			elems = 2 * n
		}
		if n < 0 || elems > int64(r.lim.maxElems) {
			return value{}, fmt.Errorf("%w: aggregate size %d outside 0..%d", errProtocol, n, r.lim.maxElems)
		}
		v := value{typ: typ}
		// Grow as elements arrive rather than trusting the announced size.
		v.elems = make([]value, 0, min(int(elems), 64))
		for i := int64(0); i < elems; i++ {
			e, err := r.readDepth(depth + 1)
			if err != nil {
				return value{}, unexpectedEOF(err)
			}
			v.elems = append(v.elems, e)
		}
		if typ == respAttribute {
			// Counting the attribute as a level bounds chains of attributes.
			return r.readDepth(depth + 1)
		}
		return v, nil
	}
	return value{}, fmt.Errorf("%w: unknown type byte %q", errProtocol, typ)
}

// line returns the next line without its CRLF. The slice is valid until the
// next read.
func (r *respReader) line() ([]byte, error) {
	line, err := r.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		// Long simple lines (big error messages) are rare: collect them.
		buf := bytes.Clone(line)
		for err == bufio.ErrBufferFull {
			if len(buf) > r.lim.maxLine {
				return nil, fmt.Errorf("%w: line longer than %d bytes", errProtocol, r.lim.maxLine)
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
	if len(line) > r.lim.maxLine+2 {
		return nil, fmt.Errorf("%w: line longer than %d bytes", errProtocol, r.lim.maxLine)
	}
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return nil, fmt.Errorf("%w: line not terminated by CRLF", errProtocol)
	}
	return line[:len(line)-2], nil
}

func parseInt(b []byte) (int64, error) {
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: bad number %q", errProtocol, b)
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

// appendCommand appends args as a RESP array of bulk strings.
func appendCommand(dst []byte, args ...string) []byte {
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
