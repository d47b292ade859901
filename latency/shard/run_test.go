package shard

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type recordFunc = func(time.Time, time.Duration, error)

func noLoad(context.Context, recordFunc) error { return nil }

// TestRunRefusesBadInput: every argument and field out of range is an
// error naming it, with a non-nil Result, before any wait.
func TestRunRefusesBadInput(t *testing.T) {
	ok := Config{Duration: time.Second}
	for _, c := range []struct {
		name  string
		ctx   context.Context
		cfg   *Config
		load  func(context.Context, recordFunc) error
		field string
	}{
		{"nil ctx", nil, &ok, noLoad, "nil context"},
		{"nil cfg", context.Background(), nil, noLoad, "Config.Duration is required"},
		{"nil load", context.Background(), &ok, nil, "nil load"},
		{"zero duration", context.Background(), &Config{}, noLoad, "Config.Duration 0s"},
		{"negative duration", context.Background(), &Config{Duration: -time.Second}, noLoad, "Config.Duration -1s"},
		{"huge duration", context.Background(), &Config{Duration: math.MaxInt64}, noLoad, "Config.Duration"},
		{"tiny interval", context.Background(), &Config{Duration: time.Second, Interval: time.Microsecond}, noLoad, "Config.Interval 1µs"},
		{"shard outside its count", context.Background(), &Config{Duration: time.Second, Shard: Spec{Index: 2, Count: 2}}, noLoad, "Config.Shard.Index 2"},
		{"negative count", context.Background(), &Config{Duration: time.Second, Shard: Spec{Index: 0, Count: -1}}, noLoad, "Config.Shard.Count -1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			called := false
			load := c.load
			if load != nil {
				load = func(ctx context.Context, rec recordFunc) error { called = true; return nil }
			}
			r, err := Run(c.ctx, c.cfg, load)
			require.ErrorIs(t, err, ErrInvalid)
			assert.ErrorContains(t, err, c.field)
			assert.NotNil(t, r)
			assert.False(t, called)
		})
	}
}

func TestRunStartAndFailure(t *testing.T) {
	r, err := Run(context.Background(), &Config{StartAt: time.Now().Add(-time.Second), Duration: time.Second}, noLoad)
	require.ErrorIs(t, err, ErrPastStart)
	assert.NotEmpty(t, r.Error)

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	begun := time.Now()
	_, err = Run(ctx, &Config{StartAt: time.Now().Add(time.Hour), Duration: time.Second}, noLoad)
	require.ErrorIs(t, err, context.Canceled)
	assert.Less(t, time.Since(begun), 10*time.Second, "the wait ends with ctx")

	r, err = Run(context.Background(), &Config{Duration: time.Second}, noLoad)
	require.Error(t, err)
	assert.ErrorContains(t, err, "recorded no operation")
	assert.Equal(t, "the load recorded no operation", r.Error, "an empty shard is a failed one")

	boom := errors.New("connection refused")
	r, err = Run(context.Background(), &Config{Shard: Spec{Index: 1, Count: 2}, Duration: time.Second}, func(_ context.Context, rec recordFunc) error {
		rec(time.Now(), time.Millisecond, nil)
		return boom
	})
	require.ErrorIs(t, err, boom)
	assert.ErrorContains(t, err, "shard: shard 1/2: connection refused")
	r.Tool = "t"
	m, err := Merge([]*Result{r}, nil)
	require.ErrorIs(t, err, ErrIncomplete)
	assert.ErrorContains(t, err, "shard 1 failed: connection refused")
	assert.Equal(t, []int{0}, m.Missing)
}

// TestRunRecordsEveryOperation: what the load records, from several
// goroutines, is in the Result's intervals, failures apart; the Result
// encodes and decodes.
func TestRunRecordsEveryOperation(t *testing.T) {
	var n atomic.Int64
	cfg := &Config{Duration: 300 * time.Millisecond, Interval: 100 * time.Millisecond}
	r, err := Run(context.Background(), cfg, func(ctx context.Context, rec recordFunc) error {
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Go(func() {
				for range 50 {
					var err error
					if w == 3 {
						err = errors.New("timeout")
					}
					rec(time.Now(), 10*time.Microsecond, err)
					n.Add(1)
				}
			})
		}
		wg.Wait()
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, Spec{Index: 0, Count: 1}, r.Shard, "the zero Spec is an unsharded run")
	assert.Equal(t, cfg.Interval, r.Interval)
	var ok, failed int64
	for _, x := range r.Intervals {
		ok, failed = ok+x.Count, failed+x.Errors
	}
	assert.Equal(t, int64(150), ok)
	assert.Equal(t, int64(50), failed)
	assert.False(t, r.End.Before(r.Start))
	var buf bytes.Buffer
	require.NoError(t, encode(&buf, r))
	got, err := Decode(&buf)
	require.NoError(t, err)
	assert.Len(t, got.Intervals, len(r.Intervals))
}

// echoServer serves TCP echo on loopback until the test ends.
func echoServer(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { defer c.Close(); _, _ = io.Copy(c, c) })
		}
	})
	return ln.Addr().String()
}

// TestTwoShardsStartedTogetherMergeWhole runs two 5 s shards against an
// in-process echo server, started together on a whole second, and merges
// them: their first intervals count (each started within the tolerance of
// StartAt), so the merge holds at least 95 % of their requests, where it
// held about 80 % when a first interval had to be whole to the
// nanosecond.
func TestTwoShardsStartedTogetherMergeWhole(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two 5 s shards")
	}
	addr := echoServer(t)
	at := time.Now().Truncate(time.Second).Add(2 * time.Second)
	rs, total := make([]*Result, 2), make([]int64, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range rs {
		wg.Go(func() {
			cfg := &Config{Shard: Spec{Index: i, Count: 2}, StartAt: at, Duration: 5 * time.Second}
			rs[i], errs[i] = Run(context.Background(), cfg, func(ctx context.Context, record recordFunc) error {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					return err
				}
				defer c.Close()
				buf := make([]byte, 16)
				for end := time.Now().Add(cfg.Duration); time.Now().Before(end); {
					t0 := time.Now()
					_ = c.SetDeadline(t0.Add(5 * time.Second))
					_, err := c.Write(buf)
					if err == nil {
						_, err = io.ReadFull(c, buf)
					}
					record(time.Now(), time.Since(t0), err)
					total[i]++
					if err != nil {
						return err
					}
				}
				return nil
			})
		})
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	for i := range rs {
		rs[i].Tool = "echo"
	}
	m, err := Merge(rs, nil)
	require.NoError(t, err)
	tol := min(time.Second/100, 10*time.Millisecond)
	if m.StartSkew > tol {
		// A starved machine woke a shard late: beyond the default
		// tolerance the first interval is left out (the mechanism), and a
		// stated tolerance takes it back.
		t.Logf("a shard started %v after StartAt, beyond the default %v", m.StartSkew, tol)
		assert.Equal(t, 4, m.Intervals)
		m, err = Merge(rs, &Config{StartTolerance: 100 * time.Millisecond})
		require.NoError(t, err)
	}
	assert.Equal(t, 5, m.Intervals)
	assert.True(t, m.WindowStart.Equal(at), "the window opens at StartAt")
	frac := float64(m.Count) / float64(total[0]+total[1])
	t.Logf("merged %d of %d requests (%.2f %%) over %v, start skew %v", m.Count, total[0]+total[1], 100*frac, m.Window, m.StartSkew)
	assert.GreaterOrEqual(t, frac, 0.95)
}
