package ports

import (
	"context"
	"net/netip"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func read(t *testing.T, name string, e *Endpoint, s *Snapshot, reuse bool) {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, parseTCP(f, e, s, reuse))
}

// 127.0.0.1:6379 (0x18EB): lines 1-3 go there, from ephemeral ports; line 4
// is the server's side, line 5 goes to 127.0.0.2, line 6 comes from port
// 4096, below the range. tcp6 adds one IPv4-mapped TIME_WAIT to it and one
// to ::1.
func TestParseTCP(t *testing.T) {
	e := &Endpoint{Port: 6379, Addrs: []netip.Addr{netip.MustParseAddr("127.0.0.1")}}
	s := &Snapshot{RangeLo: 32768, RangeHi: 60999}
	read(t, "tcp", e, s, false)
	assert.Equal(t, 3, s.TimeWait, "lines 1, 2 and 6")
	assert.Equal(t, 3, s.InUse, "lines 1-3")
	read(t, "tcp6", e, s, false)
	assert.Equal(t, 4, s.TimeWait)
	assert.Equal(t, 4, s.InUse)
	assert.InDelta(t, 4.0/28232, s.Share(), 1e-9)
	assert.Zero(t, s.Reusable)
	assert.InDelta(t, s.Share(), s.Blocked(), 1e-12)

	// With TIME_WAIT reuse, lines 1 and 2 (in the range) can be taken over;
	// line 6 is below the range.
	r := &Snapshot{RangeLo: 32768, RangeHi: 60999}
	read(t, "tcp", e, r, true)
	assert.Equal(t, 2, r.Reusable)
	assert.InDelta(t, 1.0/28232, r.Blocked(), 1e-9)

	any := &Snapshot{RangeLo: 32768, RangeHi: 60999}
	read(t, "tcp6", &Endpoint{Port: 6379}, any, false)
	assert.Equal(t, 2, any.TimeWait, "the port alone matches ::1 too")

	v6 := &Snapshot{RangeLo: 32768, RangeHi: 60999}
	read(t, "tcp6", &Endpoint{Port: 6379, Addrs: []netip.Addr{netip.IPv6Loopback()}}, v6, false)
	assert.Equal(t, 1, v6.TimeWait)
}

func TestParseTCPMalformed(t *testing.T) {
	for _, in := range []string{
		"   0: 0100007F:A3AB\n",
		"   0: 0100007F 0100007F:18EB 06\n",
		"   0: 0100007F:A3AB 0100007F:18EB ZZ\n",
		"   0: 0100007G:A3AB 0100007F:18EB 06\n",
		"   0: 0100007F:1A3AB 0100007F:18EB 06\n",
		"   0: 01007F:A3AB 0100007F:18EB 06\n",
	} {
		err := parseTCP(strings.NewReader(in), &Endpoint{Port: 6379}, &Snapshot{}, false)
		assert.ErrorIs(t, err, errParse, "%q", in)
	}
}

func TestReuses(t *testing.T) {
	lo := &Endpoint{Port: 1, Addrs: []netip.Addr{netip.MustParseAddr("127.0.0.1")}}
	veth := &Endpoint{Port: 1, Addrs: []netip.Addr{netip.MustParseAddr("198.18.31.2")}}
	name := &Endpoint{Port: 1}
	assert.True(t, lo.reuses(2))
	assert.False(t, veth.reuses(2), "2 is loopback only")
	assert.False(t, name.reuses(2), "a name: not known to be loopback")
	assert.True(t, veth.reuses(1))
	assert.False(t, lo.reuses(0))
}

func TestShareUnknownRange(t *testing.T) {
	assert.Zero(t, (&Snapshot{InUse: 5}).Share())
	assert.Zero(t, (*Snapshot)(nil).Share())
}

// askSize records the largest buffer a reader was asked to fill.
type askSize struct {
	r   *strings.Reader
	max int
}

func (a *askSize) Read(p []byte) (int, error) {
	a.max = max(a.max, len(p))
	return a.r.Read(p)
}

// parseTCP reads in large chunks: /proc/net/tcp answers each read(2) with
// as many whole lines as fit, and a host after a connect-per-operation run
// lists 14,000 sockets in TIME_WAIT (2 MB), which 512-byte reads took
// 4,700 system calls and 31-37 ms to read, 64 KiB ones 19-22 ms.
func TestParseTCPReadsLargeChunks(t *testing.T) {
	line := "   0: 0100007F:8001 0100007F:18EB 06 00000000:00000000 03:00000000 00000000     0        0 0 3 0000000000000000\n"
	a := &askSize{r: strings.NewReader(strings.Repeat(line, 1000))}
	s := &Snapshot{RangeLo: 32768, RangeHi: 60999}
	require.NoError(t, parseTCP(a, &Endpoint{Port: 6379}, s, false))
	assert.Equal(t, 1000, s.TimeWait)
	assert.GreaterOrEqual(t, a.max, 32<<10)
}

// The real files of this host parse (linux only).
func TestReadHost(t *testing.T) {
	if runtime.GOOS != "linux" {
		_, err := Read(&Endpoint{Port: 6379})
		require.Error(t, err)
		return
	}
	s, err := Read(&Endpoint{Port: 1})
	require.NoError(t, err)
	assert.Positive(t, s.RangeLo)
	assert.GreaterOrEqual(t, s.RangeHi, s.RangeLo)
}

// FuzzParseTCP: any input parses or fails with errParse, never panics, and
// the counts stay within the lines read.
func FuzzParseTCP(f *testing.F) {
	for _, name := range []string{"tcp", "tcp6"} {
		b, err := os.ReadFile("testdata/" + name)
		require.NoError(f, err)
		f.Add(string(b))
	}
	f.Add("   0: 0100007F:8001 0100007F:18EB 06\n")
	f.Add("\n\n  x\n")
	f.Fuzz(func(t *testing.T, in string) {
		s := &Snapshot{RangeLo: 1, RangeHi: 65535}
		err := parseTCP(strings.NewReader(in), &Endpoint{Port: 6379}, s, true)
		if err != nil {
			assert.ErrorIs(t, err, errParse)
			return
		}
		lines := strings.Count(in, "\n") + 1
		assert.LessOrEqual(t, s.TimeWait, lines)
		assert.LessOrEqual(t, s.InUse, lines)
		assert.LessOrEqual(t, s.Reusable, min(s.TimeWait, s.InUse))
	})
}

func TestParseEndpoint(t *testing.T) {
	e, ok := ParseEndpoint("127.0.0.1:6379")
	assert.True(t, ok)
	assert.Equal(t, uint16(6379), e.Port)
	assert.Equal(t, []netip.Addr{netip.MustParseAddr("127.0.0.1")}, e.Addrs)
	e, ok = ParseEndpoint("cache.example:6380")
	assert.True(t, ok)
	assert.Empty(t, e.Addrs, "a name: its port alone")
	_, ok = ParseEndpoint("cache.example:redis")
	assert.False(t, ok)
}

// Settle returns at once when nothing is in use (a port nobody dials), and
// with ctx's error when ctx has ended.
func TestSettle(t *testing.T) {
	e := &Endpoint{Port: 1, Addrs: []netip.Addr{netip.MustParseAddr("198.18.31.1")}}
	waited, err := Settle(context.Background(), e, 0, time.Minute)
	require.NoError(t, err)
	assert.Less(t, waited, settlePoll)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = Settle(ctx, e, 0, time.Minute)
	assert.ErrorIs(t, err, context.Canceled)
}
