package latency

import (
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRecorderIndexMatchesHdrHistogram(t *testing.T) {
	for _, cfg := range []*RecorderConfig{
		nil,
		{Lowest: time.Microsecond, Highest: 10 * time.Second, SignificantFigures: 2},
		{Lowest: 1000, Highest: 3600 * time.Second, SignificantFigures: 5},
		{Lowest: 1, Highest: 2, SignificantFigures: 1},
	} {
		r, err := NewRecorder(cfg)
		require.NoError(t, err)
		c := r.config()
		h := hdrhistogram.New(int64(c.Lowest), int64(c.Highest), c.SignificantFigures)
		require.Equal(t, len(h.Export().Counts), r.geo.countsLen, "counts length for %+v", c)
		rng := rand.New(rand.NewPCG(1, 2))
		vals := []int64{0, 1, 2, 1023, 1024, 2047, 2048, 4095, 4096, int64(c.Highest) - 1, int64(c.Highest)}
		for range 20000 {
			vals = append(vals, rng.Int64N(int64(c.Highest)+1)>>rng.IntN(40))
		}
		for _, v := range vals {
			if v > int64(c.Highest) {
				continue
			}
			require.NoError(t, h.RecordValue(v))
			r.Record(time.Duration(v))
		}
		assert.True(t, h.Equals(r.Snapshot()), "snapshot equals hdrhistogram's own recording for %+v", c)
		assert.Equal(t, int64(0), r.OutOfRange())
	}
}

func TestNewRecorderInvalid(t *testing.T) {
	for _, cfg := range []*RecorderConfig{
		{Lowest: -1},
		{Lowest: time.Second, Highest: time.Second},
		{SignificantFigures: 6},
		{SignificantFigures: -1},
	} {
		_, err := NewRecorder(cfg)
		require.Error(t, err, "%+v", cfg)
		assert.True(t, errors.Is(err, ErrInvalidConfig))
	}
	r, err := NewRecorder(&RecorderConfig{})
	require.NoError(t, err)
	assert.Equal(t, RecorderConfig{Lowest: time.Nanosecond, Highest: time.Minute, SignificantFigures: 3}, r.config())
}

func TestRecorderOutOfRange(t *testing.T) {
	r, err := NewRecorder(&RecorderConfig{Highest: time.Second})
	require.NoError(t, err)
	r.Record(2 * time.Second)
	r.Record(-time.Second)
	r.Record(time.Millisecond)
	assert.Equal(t, int64(2), r.OutOfRange())
	h := r.Snapshot()
	assert.Equal(t, int64(3), h.TotalCount())
	assert.Equal(t, int64(0), h.Min())
	assert.True(t, h.ValuesAreEquivalent(int64(time.Second), h.Max()))
}

func TestRecorderConcurrent(t *testing.T) {
	r, err := NewRecorder(nil)
	require.NoError(t, err)
	const goroutines, per = 8, 5000
	var wg sync.WaitGroup
	stop := make(chan struct{})
	go func() { // a concurrent reader must not disturb the writers
		for {
			select {
			case <-stop:
				return
			default:
				_ = r.Snapshot().TotalCount()
			}
		}
	}()
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := r.Worker()
			for i := range per {
				if g%2 == 0 {
					r.Record(time.Duration(i + 1))
				} else {
					w.Record(time.Duration(i + 1))
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	h := r.Snapshot()
	assert.Equal(t, int64(goroutines*per), h.TotalCount())
	assert.Equal(t, int64(goroutines*per), r.Count())
	assert.Equal(t, int64(1), h.Min())
	assert.True(t, h.ValuesAreEquivalent(per, h.Max()))
}

func TestRecorderMergeResetSnapshotIsCopy(t *testing.T) {
	a, err := NewRecorder(nil)
	require.NoError(t, err)
	b, err := NewRecorder(&RecorderConfig{Lowest: time.Microsecond, Highest: time.Hour})
	require.NoError(t, err)
	a.Record(10 * time.Microsecond)
	b.Record(20 * time.Microsecond)
	b.Record(2 * time.Minute) // beyond a's 60 s range
	assert.Equal(t, int64(1), a.Merge(b.Snapshot()), "one value is outside a's range")
	snap := a.Snapshot()
	assert.Equal(t, int64(2), snap.TotalCount())
	a.Record(30 * time.Microsecond)
	assert.Equal(t, int64(2), snap.TotalCount(), "a snapshot is a copy")
	assert.Equal(t, int64(3), a.Count())
	s := a.Summary(0)
	assert.Equal(t, int64(3), s.Observations)
	assert.InDelta(t, 20, usOf(s.P50), 0.05)
	assert.Equal(t, int64(0), a.Merge(nil))
}

func BenchmarkRecord(b *testing.B) {
	r, err := NewRecorder(nil)
	require.NoError(b, err)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		r.Record(time.Duration(5000 + i&1023))
	}
}

func BenchmarkRecordWorker(b *testing.B) {
	r, err := NewRecorder(nil)
	require.NoError(b, err)
	w := r.Worker()
	for i := 0; b.Loop(); i++ {
		w.Record(time.Duration(5000 + i&1023))
	}
}

// BenchmarkRecordParallel records from 2 goroutines at once (run with -cpu 2):
// the per-value cost must not collapse compared with BenchmarkRecord.
func BenchmarkRecordParallel(b *testing.B) {
	r, err := NewRecorder(nil)
	require.NoError(b, err)
	b.SetParallelism(1)
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			r.Record(time.Duration(5000 + i&1023))
			i++
		}
	})
}

// BenchmarkHdrRecordValueLocked is the baseline a global lock would give.
func BenchmarkHdrRecordValueLocked(b *testing.B) {
	h := hdrhistogram.New(1, int64(time.Minute), 3)
	var mu sync.Mutex
	b.SetParallelism(1)
	b.RunParallel(func(pb *testing.PB) {
		i := int64(0)
		for pb.Next() {
			mu.Lock()
			_ = h.RecordValue(5000 + i&1023)
			mu.Unlock()
			i++
		}
	})
}

// BenchmarkRecordWorkerParallel is the no-sharing ideal for
// BenchmarkRecordParallel: every goroutine records into its own Worker.
func BenchmarkRecordWorkerParallel(b *testing.B) {
	r, err := NewRecorder(nil)
	require.NoError(b, err)
	b.SetParallelism(1)
	b.RunParallel(func(pb *testing.PB) {
		w := r.Worker()
		i := 0
		for pb.Next() {
			w.Record(time.Duration(5000 + i&1023))
			i++
		}
	})
}
