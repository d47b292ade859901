package cache

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

func readAll(t *testing.T, in string) value {
	t.Helper()
	v, err := newRespReader(strings.NewReader(in), defaultLimits).read()
	require.NoError(t, err, "%q", in)
	return v
}

func TestRespReadTypes(t *testing.T) {
	assert.Equal(t, value{typ: '+', str: []byte("OK")}, readAll(t, "+OK\r\n"))
	assert.Equal(t, "WRONGPASS invalid", readAll(t, "-WRONGPASS invalid\r\n").text())
	assert.True(t, readAll(t, "-ERR x\r\n").isError())
	assert.Equal(t, int64(-42), readAll(t, ":-42\r\n").num)
	assert.Equal(t, "a\r\nb", readAll(t, "$4\r\na\r\nb\r\n").text())
	assert.True(t, readAll(t, "$-1\r\n").null)
	assert.True(t, readAll(t, "*-1\r\n").null)
	assert.True(t, readAll(t, "_\r\n").null)
	assert.Equal(t, int64(1), readAll(t, "#t\r\n").num)
	assert.Equal(t, "3.14", readAll(t, ",3.14\r\n").text())
	assert.Equal(t, "txt:hi", readAll(t, "=6\r\ntxt:hi\r\n").text())
	assert.True(t, readAll(t, "!3\r\nbad\r\n").isError())
	m := readAll(t, "%1\r\n+k\r\n:1\r\n")
	require.Len(t, m.elems, 2)
	assert.Equal(t, "k", m.elems[0].text())
	// An attribute is dropped and the value after it returned.
	assert.Equal(t, int64(7), readAll(t, "|1\r\n+key\r\n+val\r\n:7\r\n").num)
	arr := readAll(t, "*3\r\n:1\r\n*1\r\n$1\r\nx\r\n~0\r\n")
	require.Len(t, arr.elems, 3)
	assert.Equal(t, "x", arr.elems[1].elems[0].text())
	assert.Equal(t, byte('~'), arr.elems[2].typ)
}

func TestRespReadErrors(t *testing.T) {
	lim := respLimits{maxBulk: 16, maxElems: 4, maxDepth: 3, maxLine: 32}
	for name, tc := range map[string]struct {
		in   string
		want error
	}{
		"unknown type":      {"?x\r\n", errProtocol},
		"bare LF":           {"+OK\n", errProtocol},
		"empty line":        {"\r\n", errProtocol},
		"bad int":           {":12a\r\n", errProtocol},
		"bulk too long":     {"$17\r\n", errProtocol},
		"huge bulk":         {"$9223372036854775807\r\n", errProtocol},
		"negative bulk":     {"$-2\r\n", errProtocol},
		"overflow number":   {"*99999999999999999999\r\n", errProtocol},
		"array too big":     {"*5\r\n", errProtocol},
		"map too big":       {"%3\r\n", errProtocol},
		"too deep":          {"*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n", errProtocol},
		"attribute chain":   {strings.Repeat("|0\r\n", 10) + ":1\r\n", errProtocol},
		"bulk no CRLF":      {"$2\r\nabcd", errProtocol},
		"long line":         {"+" + strings.Repeat("x", 100) + "\r\n", errProtocol},
		"bad bool":          {"#x\r\n", errProtocol},
		"null with payload": {"_x\r\n", errProtocol},
		"short verbatim":    {"=2\r\nab\r\n", errProtocol},
		"empty input":       {"", io.EOF},
		"truncated line":    {"+OK", io.ErrUnexpectedEOF},
		"truncated bulk":    {"$5\r\nab", io.ErrUnexpectedEOF},
		"truncated array":   {"*2\r\n:1\r\n", io.ErrUnexpectedEOF},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := newRespReader(strings.NewReader(tc.in), lim).read()
			require.ErrorIs(t, err, tc.want)
		})
	}
}

func TestAppendCommand(t *testing.T) {
	got := appendCommand(nil, "SET", "k", "")
	assert.Equal(t, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n", string(got))
	v := readAll(t, string(got))
	require.Len(t, v.elems, 3)
	assert.Equal(t, "", v.elems[2].text())
}

// FuzzRespReader feeds arbitrary bytes to the reader: it must never panic or
// exceed its limits, and whatever it accepts must re-encode to bytes that decode
// to the same value.
func FuzzRespReader(f *testing.F) {
	for _, s := range []string{
		"+OK\r\n", "-ERR x\r\n", ":1\r\n", "$3\r\nabc\r\n", "$-1\r\n", "*-1\r\n",
		"*2\r\n$1\r\na\r\n:2\r\n", "%1\r\n+a\r\n#t\r\n", "~1\r\n,1.5\r\n", "_\r\n",
		"|1\r\n+a\r\n+b\r\n:1\r\n", ">2\r\n+p\r\n:1\r\n", "=7\r\ntxt:abc\r\n", "(123\r\n",
		"!2\r\nno\r\n", "*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n", "$99999999999\r\n", "*2147483648\r\n",
		"$5\r\nab", "*3\r\n:1\r\n", "+no-crlf\n",
	} {
		f.Add([]byte(s))
	}
	lim := respLimits{maxBulk: 1 << 10, maxElems: 1 << 10, maxDepth: 8, maxLine: 256}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := newRespReader(bufio.NewReaderSize(bytes.NewReader(data), 64), lim)
		for i := 0; i < 16; i++ {
			v, err := r.read()
			if err != nil {
				if !errors.Is(err, errProtocol) && err != io.EOF && err != io.ErrUnexpectedEOF {
					t.Fatalf("unexpected error type: %v", err)
				}
				return
			}
			checkLimits(t, v, lim, 0)
			enc := appendValue(nil, v)
			again, err := newRespReader(bytes.NewReader(enc), lim).read()
			if err != nil {
				t.Fatalf("re-encoded %q does not decode: %v", enc, err)
			}
			if !bytes.Equal(appendValue(nil, again), enc) {
				t.Fatalf("round trip changed %q", enc)
			}
		}
	})
}

func checkLimits(t *testing.T, v value, lim respLimits, depth int) {
	if depth > lim.maxDepth || len(v.str) > lim.maxBulk || len(v.elems) > lim.maxElems {
		t.Fatalf("limits exceeded: depth %d, str %d, elems %d", depth, len(v.str), len(v.elems))
	}
	for _, e := range v.elems {
		checkLimits(t, e, lim, depth+1)
	}
}

// newRespReader returns a reader of r (buffering it unless it is a
// *bufio.Reader already).
func newRespReader(r io.Reader, lim respLimits) *respReader {
	if br, ok := r.(*bufio.Reader); ok {
		return &respReader{br: br, lim: lim}
	}
	return &respReader{br: bufio.NewReader(r), lim: lim}
}

// appendValue encodes v back into RESP for round trips.
func appendValue(dst []byte, v value) []byte {
	dst = append(dst, v.typ)
	switch v.typ {
	case respSimple, respError, respDouble, respBigNumber:
		dst = append(dst, v.str...)
	case respInteger:
		dst = strconv.AppendInt(dst, v.num, 10)
	case respNull:
	case respBool:
		if v.num != 0 {
			dst = append(dst, 't')
		} else {
			dst = append(dst, 'f')
		}
	case respBulk, respBlobError, respVerbatim:
		if v.null {
			return append(dst, "-1\r\n"...)
		}
		dst = strconv.AppendInt(dst, int64(len(v.str)), 10)
		dst = append(dst, '\r', '\n')
		dst = append(dst, v.str...)
	default: // aggregates
		if v.null {
			return append(dst, "-1\r\n"...)
		}
		n := len(v.elems)
		if v.typ == respMap || v.typ == respAttribute {
			n /= 2
		}
		dst = strconv.AppendInt(dst, int64(n), 10)
		dst = append(dst, '\r', '\n')
		for _, e := range v.elems {
			dst = appendValue(dst, e)
		}
		return dst
	}
	return append(dst, '\r', '\n')
}
