package resp

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func readAll(t *testing.T, in string) Value {
	t.Helper()
	v, err := newTestReader(strings.NewReader(in), DefaultLimits).Read()
	require.NoError(t, err, "%q", in)
	return v
}

func TestReadTypes(t *testing.T) {
	assert.Equal(t, Value{Type: '+', Str: []byte("OK")}, readAll(t, "+OK\r\n"))
	assert.Equal(t, "WRONGPASS invalid", readAll(t, "-WRONGPASS invalid\r\n").Text())
	assert.True(t, readAll(t, "-ERR x\r\n").IsError())
	assert.Equal(t, int64(-42), readAll(t, ":-42\r\n").Num)
	assert.Equal(t, "a\r\nb", readAll(t, "$4\r\na\r\nb\r\n").Text())
	assert.True(t, readAll(t, "$-1\r\n").Null)
	assert.True(t, readAll(t, "*-1\r\n").Null)
	assert.True(t, readAll(t, "_\r\n").Null)
	assert.Equal(t, int64(1), readAll(t, "#t\r\n").Num)
	assert.Equal(t, "3.14", readAll(t, ",3.14\r\n").Text())
	assert.Equal(t, "txt:hi", readAll(t, "=6\r\ntxt:hi\r\n").Text())
	assert.True(t, readAll(t, "!3\r\nbad\r\n").IsError())
	m := readAll(t, "%1\r\n+k\r\n:1\r\n")
	require.Len(t, m.Elems, 2)
	assert.Equal(t, "k", m.Elems[0].Text())
	// An attribute is dropped and the value after it returned.
	assert.Equal(t, int64(7), readAll(t, "|1\r\n+key\r\n+val\r\n:7\r\n").Num)
	arr := readAll(t, "*3\r\n:1\r\n*1\r\n$1\r\nx\r\n~0\r\n")
	require.Len(t, arr.Elems, 3)
	assert.Equal(t, "x", arr.Elems[1].Elems[0].Text())
	assert.Equal(t, byte('~'), arr.Elems[2].Type)
}

func TestReadErrors(t *testing.T) {
	lim := Limits{MaxBulk: 16, MaxElems: 4, MaxDepth: 3, MaxLine: 32}
	for name, tc := range map[string]struct {
		in   string
		want error
	}{
		"unknown type":      {"?x\r\n", ErrProtocol},
		"bare LF":           {"+OK\n", ErrProtocol},
		"empty line":        {"\r\n", ErrProtocol},
		"bad int":           {":12a\r\n", ErrProtocol},
		"bulk too long":     {"$17\r\n", ErrProtocol},
		"huge bulk":         {"$9223372036854775807\r\n", ErrProtocol},
		"negative bulk":     {"$-2\r\n", ErrProtocol},
		"overflow number":   {"*99999999999999999999\r\n", ErrProtocol},
		"array too big":     {"*5\r\n", ErrProtocol},
		"map too big":       {"%3\r\n", ErrProtocol},
		"map count wraps":   {"%7000000000000000000\r\n", ErrProtocol}, // 2n < 0
		"attribute wraps":   {"|4611686018427387904\r\n", ErrProtocol},
		"too deep":          {"*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n", ErrProtocol},
		"attribute chain":   {strings.Repeat("|0\r\n", 10) + ":1\r\n", ErrProtocol},
		"bulk no CRLF":      {"$2\r\nabcd", ErrProtocol},
		"long line":         {"+" + strings.Repeat("x", 100) + "\r\n", ErrProtocol},
		"bad bool":          {"#x\r\n", ErrProtocol},
		"null with payload": {"_x\r\n", ErrProtocol},
		"short verbatim":    {"=2\r\nab\r\n", ErrProtocol},
		"empty input":       {"", io.EOF},
		"truncated line":    {"+OK", io.ErrUnexpectedEOF},
		"truncated bulk":    {"$5\r\nab", io.ErrUnexpectedEOF},
		"truncated array":   {"*2\r\n:1\r\n", io.ErrUnexpectedEOF},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := newTestReader(strings.NewReader(tc.in), lim).Read()
			require.ErrorIs(t, err, tc.want)
		})
	}
}

func TestAppendCommand(t *testing.T) {
	got := AppendCommand(nil, "SET", "k", "")
	assert.Equal(t, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n", string(got))
	v := readAll(t, string(got))
	require.Len(t, v.Elems, 3)
	assert.Equal(t, "", v.Elems[2].Text())
}

// FuzzReader feeds arbitrary bytes to the reader: it must never panic or
// exceed its limits, and whatever it accepts must re-encode to bytes that decode
// to the same value.
func FuzzReader(f *testing.F) {
	for _, s := range []string{
		"+OK\r\n", "-ERR x\r\n", ":1\r\n", "$3\r\nabc\r\n", "$-1\r\n", "*-1\r\n",
		"*2\r\n$1\r\na\r\n:2\r\n", "%1\r\n+a\r\n#t\r\n", "~1\r\n,1.5\r\n", "_\r\n",
		"|1\r\n+a\r\n+b\r\n:1\r\n", ">2\r\n+p\r\n:1\r\n", "=7\r\ntxt:abc\r\n", "(123\r\n",
		"!2\r\nno\r\n", "*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n", "$99999999999\r\n", "*2147483648\r\n",
		"$5\r\nab", "*3\r\n:1\r\n", "+no-crlf\n",
	} {
		f.Add([]byte(s))
	}
	lim := Limits{MaxBulk: 1 << 10, MaxElems: 1 << 10, MaxDepth: 8, MaxLine: 256}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := newTestReader(bufio.NewReaderSize(bytes.NewReader(data), 64), lim)
		for i := 0; i < 16; i++ {
			v, err := r.Read()
			if err != nil {
				if !errors.Is(err, ErrProtocol) && err != io.EOF && err != io.ErrUnexpectedEOF {
					t.Fatalf("unexpected error type: %v", err)
				}
				return
			}
			checkLimits(t, v, lim, 0)
			enc := appendValue(nil, v)
			again, err := newTestReader(bytes.NewReader(enc), lim).Read()
			if err != nil {
				t.Fatalf("re-encoded %q does not decode: %v", enc, err)
			}
			if !bytes.Equal(appendValue(nil, again), enc) {
				t.Fatalf("round trip changed %q", enc)
			}
		}
	})
}

func checkLimits(t *testing.T, v Value, lim Limits, depth int) {
	if depth > lim.MaxDepth || len(v.Str) > lim.MaxBulk || len(v.Elems) > lim.MaxElems {
		t.Fatalf("limits exceeded: depth %d, str %d, elems %d", depth, len(v.Str), len(v.Elems))
	}
	for _, e := range v.Elems {
		checkLimits(t, e, lim, depth+1)
	}
}

// newTestReader returns a reader of r (buffering it unless it is a
// *bufio.Reader already).
func newTestReader(r io.Reader, lim Limits) *Reader {
	if br, ok := r.(*bufio.Reader); ok {
		return NewReader(br, lim)
	}
	return NewReader(bufio.NewReader(r), lim)
}

// appendValue encodes v back into RESP for round trips.
func appendValue(dst []byte, v Value) []byte {
	dst = append(dst, v.Type)
	switch v.Type {
	case Simple, Error, Double, BigNumber:
		dst = append(dst, v.Str...)
	case Integer:
		dst = strconv.AppendInt(dst, v.Num, 10)
	case Null:
	case Bool:
		if v.Num != 0 {
			dst = append(dst, 't')
		} else {
			dst = append(dst, 'f')
		}
	case Bulk, BlobError, Verbatim:
		if v.Null {
			return append(dst, "-1\r\n"...)
		}
		dst = strconv.AppendInt(dst, int64(len(v.Str)), 10)
		dst = append(dst, '\r', '\n')
		dst = append(dst, v.Str...)
	default: // aggregates
		if v.Null {
			return append(dst, "-1\r\n"...)
		}
		n := len(v.Elems)
		if v.Type == Map || v.Type == Attribute {
			n /= 2
		}
		dst = strconv.AppendInt(dst, int64(n), 10)
		dst = append(dst, '\r', '\n')
		for _, e := range v.Elems {
			dst = appendValue(dst, e)
		}
		return dst
	}
	return append(dst, '\r', '\n')
}
