package latency

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func filledRecorder(t testing.TB) *Recorder {
	r, err := NewRecorder(nil)
	require.NoError(t, err)
	for _, d := range goldenSamples() {
		r.Record(d)
	}
	return r
}

func TestEncodeHistogramRoundTrip(t *testing.T) {
	h := filledRecorder(t).Snapshot()
	s, err := EncodeHistogram(h)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(s, "HISTFAAA"), s[:12])
	back, err := DecodeHistogram(s)
	require.NoError(t, err)
	assert.True(t, h.Equals(back))
	_, err = DecodeHistogram("HISTFAAAnot base64!")
	assert.Error(t, err)
	_, err = EncodeHistogram(nil)
	assert.Error(t, err)
}

func TestHistogramLogRoundTrip(t *testing.T) {
	r := filledRecorder(t)
	start := time.Unix(1_700_000_000, 0)
	var b bytes.Buffer
	l, err := NewHistogramLog(&b, start)
	require.NoError(t, err)
	h1 := r.Snapshot()
	require.NoError(t, l.WriteInterval(h1, start, start.Add(time.Second), "udp"))
	r.Record(time.Millisecond)
	h2 := r.Snapshot()
	require.NoError(t, l.WriteInterval(h2, start.Add(time.Second), start.Add(2*time.Second), ""))
	assert.Error(t, l.WriteInterval(h2, start, start, "bad tag"))
	out := b.String()
	assert.Contains(t, out, "#[Histogram log format version 1.3]")
	assert.Contains(t, out, "#[StartTime: 1700000000 (seconds since epoch)")
	assert.Contains(t, out, "#[BaseTime: 1700000000")
	assert.Contains(t, out, "Tag=udp,0.000000,1.000000,0.250")
	assert.Contains(t, out, "\n1.000000,1.000000,1.000")

	hs, err := ReadHistogramLog(strings.NewReader(out))
	require.NoError(t, err)
	require.Len(t, hs, 2)
	assert.Equal(t, h1.TotalCount(), hs[0].TotalCount())
	assert.Equal(t, h2.TotalCount(), hs[1].TotalCount())
	assert.Equal(t, h1.ValueAtPercentile(99), hs[0].ValueAtPercentile(99))
	assert.Equal(t, "udp", hs[0].Tag())
}

func TestWritePercentiles(t *testing.T) {
	h := filledRecorder(t).Snapshot()
	var b bytes.Buffer
	require.NoError(t, WritePercentiles(&b, h))
	lines := strings.Split(b.String(), "\n")
	assert.Equal(t, " Value\tPercentile\tTotalCount\t1/(1-Percentile)", lines[0])
	assert.Contains(t, lines[len(lines)-3], "Total count    =         1002")
	// The first row is the minimum in microseconds at percentile 0.
	assert.Regexp(t, `^\s+2\.065\s+0\.000000\s+1\s+1\.00$`, lines[2])
	assert.Contains(t, b.String(), "#[Mean    =       34.8")
}

func TestAggregate(t *testing.T) {
	assert.Equal(t, Range{Median: 2, Min: 1, Max: 9, N: 3}, Aggregate([]float64{9, 1, 2}))
	assert.Equal(t, Range{Median: 2.5, Min: 1, Max: 9, N: 4}, Aggregate([]float64{9, 1, 2, 3}))
	assert.Equal(t, Range{}, Aggregate(nil))
	runs := []Summary{{P50Us: 5, Dropped: 1}, {P50Us: 4, Dropped: 0}, {P50Us: 7, Dropped: 3}}
	assert.Equal(t, Range{Median: 1, Min: 0, Max: 3, N: 3}, AggregateFunc(runs, func(s Summary) float64 { return float64(s.Dropped) }))
	assert.Equal(t, Range{Median: 5, Min: 4, Max: 7, N: 3}, AggregateFunc(runs, func(s Summary) float64 { return s.P50Us }))
}
