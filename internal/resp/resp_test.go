package resp

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
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

// A bulk header announcing MaxBulk bytes followed by a few bytes and then
// nothing must not cost MaxBulk: the buffer grows as bytes arrive.
func TestReadBulkGrowsAsBytesArrive(t *testing.T) {
	in := "$67108863\r\n" + strings.Repeat("x", 100)
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	_, err := newTestReader(strings.NewReader(in), DefaultLimits).Read()
	runtime.ReadMemStats(&m1)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	assert.Less(t, m1.TotalAlloc-m0.TotalAlloc, uint64(4<<20), "allocated for 100 bytes received")

	// A string longer than one chunk still arrives whole.
	long := strings.Repeat("abcdefgh", 3*bulkChunk/8+5)
	v := readAll(t, "$"+strconv.Itoa(len(long))+"\r\n"+long+"\r\n")
	assert.Equal(t, long, v.Text())
	_, err = newTestReader(strings.NewReader("$"+strconv.Itoa(len(long))+"\r\n"+long+"ab"), DefaultLimits).Read()
	require.ErrorIs(t, err, ErrProtocol, "not terminated by CRLF")
}

// nested returns an array of n arrays of n RESP3 nulls.
func nested(n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", n)
	for range n {
		fmt.Fprintf(&b, "*%d\r\n", n)
		for range n {
			b.WriteString("_\r\n")
		}
	}
	return b.String()
}

// Nesting multiplies the per-aggregate limit: the per-reply budgets bound
// the total, and the reader stops as soon as an announced size would
// exceed them.
func TestReadReplyBudget(t *testing.T) {
	in := nested(1024) // 3 MiB on the wire, a million values decoded
	_, err := newTestReader(strings.NewReader(in), DefaultLimits).Read()
	require.ErrorIs(t, err, ErrReplyTooLarge)
	require.ErrorIs(t, err, ErrProtocol)
	// What the reader allocates is bounded by the budget, whatever the
	// per-aggregate limits let through (without one: over 200 MiB).
	small := DefaultLimits
	small.MaxReplyElems = 1 << 16
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	_, err = newTestReader(strings.NewReader(in), small).Read()
	runtime.ReadMemStats(&m1)
	require.ErrorIs(t, err, ErrReplyTooLarge)
	assert.Less(t, m1.TotalAlloc-m0.TotalAlloc, uint64(64<<20), "the budget stops the reader early")

	lim := Limits{MaxBulk: 100, MaxElems: 10, MaxDepth: 4, MaxLine: 100, MaxReplyElems: 12, MaxReplyBytes: 64}
	for name, tc := range map[string]struct {
		in   string
		want error
	}{
		"elements fit":     {nested(3), nil},                                                                               // 3 + 9 = 12
		"elements over":    {"*5\r\n" + strings.Repeat("*2\r\n:1\r\n:2\r\n", 5), ErrReplyTooLarge},                         // 5 + 10
		"map pairs count":  {"%2\r\n" + strings.Repeat("+k\r\n*5\r\n:1\r\n:1\r\n:1\r\n:1\r\n:1\r\n", 2), ErrReplyTooLarge}, // 4 + 10
		"attribute counts": {"|5\r\n" + strings.Repeat("+k\r\n+v\r\n", 5) + "*3\r\n:1\r\n:2\r\n:3\r\n", ErrReplyTooLarge},
		"bytes fit":        {"*2\r\n$20\r\n" + strings.Repeat("x", 20) + "\r\n$20\r\n" + strings.Repeat("y", 20) + "\r\n", nil},
		"bulk bytes over":  {"*2\r\n$30\r\n" + strings.Repeat("x", 30) + "\r\n$30\r\n" + strings.Repeat("y", 30) + "\r\n", ErrReplyTooLarge},
		"line bytes over":  {"*3\r\n+" + strings.Repeat("a", 30) + "\r\n+" + strings.Repeat("b", 30) + "\r\n:1\r\n", ErrReplyTooLarge},
		"one bulk over":    {"$99\r\n", ErrReplyTooLarge},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := newTestReader(strings.NewReader(tc.in), lim).Read()
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tc.want)
			require.ErrorIs(t, err, ErrProtocol)
		})
	}

	// The budget is per reply: the next Read starts afresh.
	r := newTestReader(strings.NewReader(nested(3)+nested(3)), lim)
	for range 2 {
		v, err := r.Read()
		require.NoError(t, err)
		require.Len(t, v.Elems, 3)
	}
}

// clusterSlotsReply is a Redis 7 CLUSTER SLOTS reply: ranges of width
// slots, each served by a primary and replicas replicas, every node as
// host, port, id and a hostname metadata map.
func clusterSlotsReply(width, replicas int) string {
	var b strings.Builder
	ranges := (16384 + width - 1) / width
	fmt.Fprintf(&b, "*%d\r\n", ranges)
	for i := range ranges {
		lo, hi := i*width, min(i*width+width, 16384)-1
		fmt.Fprintf(&b, "*%d\r\n:%d\r\n:%d\r\n", 3+replicas, lo, hi)
		for n := range 1 + replicas {
			id := fmt.Sprintf("%040d", i*8+n)
			fmt.Fprintf(&b, "*4\r\n$9\r\n127.0.0.1\r\n:%d\r\n$40\r\n%s\r\n%%1\r\n$8\r\nhostname\r\n$14\r\nnode.cache.int\r\n", 7000+n, id)
		}
	}
	return b.String()
}

// The default budgets hold the largest CLUSTER SLOTS reply DefaultLimits
// documents: every slot its own range, three replicas per primary.
func TestDefaultBudgetHoldsClusterSlots(t *testing.T) {
	v := readAll(t, clusterSlotsReply(1, 3))
	require.Len(t, v.Elems, 16384)
	require.Len(t, v.Elems[16383].Elems, 6)
	assert.Equal(t, "127.0.0.1", v.Elems[16383].Elems[5].Elems[0].Text())
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
		// Hostile: a huge announced bulk that never arrives; nesting that
		// multiplies elements past the per-reply budget; strings that
		// together pass the byte budget; a map whose pairs pass it.
		"$67108863\r\n", "$1000\r\nabc", nested(4), nested(9),
		"*3\r\n$1000\r\n" + strings.Repeat("x", 1000) + "\r\n$1000\r\n" + strings.Repeat("y", 1000) + "\r\n$1000\r\n",
		"%40\r\n" + strings.Repeat("+k\r\n*2\r\n:1\r\n:2\r\n", 40),
		clusterSlotsReply(8192, 1),
	} {
		f.Add([]byte(s))
	}
	lim := Limits{MaxBulk: 1 << 10, MaxElems: 1 << 10, MaxDepth: 8, MaxLine: 256, MaxReplyElems: 64, MaxReplyBytes: 2500}
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
			if n := countElems(v); n > lim.MaxReplyElems {
				t.Fatalf("%d elements in one reply, budget %d", n, lim.MaxReplyElems)
			}
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

// countElems returns the number of elements v holds at every level.
func countElems(v Value) int {
	n := len(v.Elems)
	for _, e := range v.Elems {
		n += countElems(e)
	}
	return n
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
