package slo

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/latency"
)

// model is a server whose p99 is 100 µs up to capacity and 1 s above it;
// a step holds rate·d requests.
func model(capacity float64) func(context.Context, float64, time.Duration) (Step, error) {
	return func(_ context.Context, rate float64, d time.Duration) (Step, error) {
		h := hdrhistogram.New(1, int64(time.Minute), 3)
		v := int64(100 * time.Microsecond)
		if rate > capacity {
			v = int64(time.Second)
		}
		_ = h.RecordValues(v, int64(rate*d.Seconds()))
		return Step{Response: h, AchievedRate: rate, ClientShare: 7 * time.Microsecond}, nil
	}
}

func TestSearchGrowThenBisect(t *testing.T) {
	var seen []Step
	res, err := Search(context.Background(), &Config{
		SLO: SLO{Percentile: 99, Max: time.Millisecond}, Start: 1000, Precision: 0.01,
		MaxSteps: 30, OnStep: func(s Step) { seen = append(seen, s) }, Measure: model(3300),
	})
	require.NoError(t, err)
	assert.Equal(t, res.Steps, seen)
	assert.Equal(t, "p99=1ms", res.SLO)
	// 1000, 2000 met; 4000 broke; then bisection between 2000 and 4000.
	require.GreaterOrEqual(t, len(res.Steps), 4)
	assert.Equal(t, []float64{1000, 2000, 4000}, []float64{res.Steps[0].Rate, res.Steps[1].Rate, res.Steps[2].Rate})
	assert.Equal(t, "grow", res.Steps[2].Phase)
	assert.False(t, res.Steps[2].Met)
	assert.Equal(t, "bisect", res.Steps[3].Phase)
	assert.Equal(t, 3000.0, res.Steps[3].Rate)
	assert.LessOrEqual(t, res.Rate, 3300.0)
	assert.Greater(t, res.BrokeAt, 3300.0)
	assert.LessOrEqual(t, res.BrokeAt, res.Rate*1.01, "bisected to the precision")
	assert.InDelta(t, float64(100*time.Microsecond), float64(res.Steps[0].Percentile), 1e3)
	assert.InDelta(t, float64(time.Second), float64(res.Steps[2].Percentile), 1e6)
}

func TestSearchShrink(t *testing.T) {
	res, err := Search(context.Background(), &Config{SLO: SLO{Percentile: 99, Max: time.Millisecond}, Start: 1000, Precision: 0.1, Measure: model(300)})
	require.NoError(t, err)
	assert.Equal(t, []string{"grow", "shrink", "shrink"}, []string{res.Steps[0].Phase, res.Steps[1].Phase, res.Steps[2].Phase})
	assert.Equal(t, 250.0, res.Steps[2].Rate)
	assert.True(t, res.Steps[2].Met)
	assert.Greater(t, res.Rate, 250.0)
	assert.LessOrEqual(t, res.Rate, 300.0)
}

func TestSearchNeverBreaks(t *testing.T) {
	res, err := Search(context.Background(), &Config{SLO: SLO{Percentile: 99, Max: time.Millisecond}, Start: 3e6, Measure: model(1e9)})
	require.NoError(t, err)
	assert.Equal(t, 1e7, res.Rate, "up to the maximum rate")
	assert.Zero(t, res.BrokeAt)
	assert.Len(t, res.Steps, 3, "3M, 6M, 10M")
}

// A step that could not offer its rate, or had failures, does not meet the
// SLO, however fast its answers.
func TestSearchUndelivered(t *testing.T) {
	fast := model(1e9)
	res, err := Search(context.Background(), &Config{SLO: SLO{Percentile: 99, Max: time.Millisecond}, Start: 1000, MaxSteps: 1,
		Measure: func(ctx context.Context, rate float64, d time.Duration) (Step, error) {
			m, err := fast(ctx, rate, d)
			m.AchievedRate = rate / 2
			return m, err
		}})
	require.NoError(t, err)
	assert.False(t, res.Steps[0].Met)
	res, err = Search(context.Background(), &Config{SLO: SLO{Percentile: 99, Max: time.Millisecond}, Start: 1000, MaxSteps: 1,
		Measure: func(ctx context.Context, rate float64, d time.Duration) (Step, error) {
			m, err := fast(ctx, rate, d)
			m.Failed = 1
			return m, err
		}})
	require.NoError(t, err)
	assert.False(t, res.Steps[0].Met)
}

// Each step holds enough requests for its percentile: a p99 needs 1,000,
// so the 1 s steps at 500/s, 250/s and 125/s are lengthened (with a margin
// for a warm-up) and report their counts. At 62.5/s ten steps' length holds
// only 625, but all of them break the SLO: broken. At 31.25/s the 312 meet
// it, too few to say it is met: that step is unjudged and ends the search,
// its rate neither met nor broken.
func TestSearchStepsHoldEnoughRequests(t *testing.T) {
	var lengths []time.Duration
	m := model(40)
	res, err := Search(context.Background(), &Config{SLO: SLO{Percentile: 99, Max: time.Millisecond}, Start: 500, MaxSteps: 10,
		Measure: func(ctx context.Context, rate float64, d time.Duration) (Step, error) {
			lengths = append(lengths, d)
			return m(ctx, rate, d)
		}})
	require.NoError(t, err)
	require.Len(t, res.Steps, 5, "500, 250, 125 and 62.5 broke; 31.25 unjudged")
	assert.Equal(t, []time.Duration{3 * time.Second, 6 * time.Second, 10 * time.Second, 10 * time.Second, 10 * time.Second}, lengths)
	for _, st := range res.Steps[:4] {
		assert.False(t, st.Met)
		assert.False(t, st.Unjudged, "rate %v", st.Rate)
		assert.Equal(t, 7*time.Microsecond, st.ClientShare)
	}
	for _, st := range res.Steps[:3] {
		assert.GreaterOrEqual(t, st.Requests, int64(1000), "rate %v", st.Rate)
	}
	last := res.Steps[4]
	assert.True(t, last.Unjudged)
	assert.False(t, last.Met)
	assert.Equal(t, int64(312), last.Requests)
	assert.Zero(t, res.Rate)
	assert.Equal(t, 62.5, res.BrokeAt, "an unjudged rate does not count as broken")

	// A step short of requests because the server could not take the
	// rate is broken, not unjudged.
	res, err = Search(context.Background(), &Config{SLO: SLO{Percentile: 99, Max: time.Millisecond}, Start: 1000, MaxSteps: 1,
		Measure: func(ctx context.Context, rate float64, d time.Duration) (Step, error) {
			m, err := m(ctx, rate, d/10)
			m.AchievedRate = rate / 10
			return m, err
		}})
	require.NoError(t, err)
	assert.False(t, res.Steps[0].Unjudged)
	assert.False(t, res.Steps[0].Met)
}

func TestSearchErrors(t *testing.T) {
	_, err := Search(context.Background(), nil)
	require.ErrorIs(t, err, latency.ErrInvalidConfig)
	_, err = Search(context.Background(), &Config{SLO: SLO{Percentile: 99, Max: time.Millisecond}})
	require.ErrorIs(t, err, latency.ErrInvalidConfig)
	assert.ErrorContains(t, err, "Measure")
	boom := errors.New("boom")
	res, err := Search(context.Background(), &Config{SLO: SLO{Percentile: 99, Max: time.Millisecond},
		Measure: func(context.Context, float64, time.Duration) (Step, error) { return Step{}, boom }})
	require.ErrorIs(t, err, boom)
	assert.Empty(t, res.Steps)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = Search(ctx, &Config{SLO: SLO{Percentile: 99, Max: time.Millisecond}, Measure: model(1e9)})
	require.ErrorIs(t, err, context.Canceled)
}

func TestParse(t *testing.T) {
	s, err := Parse("p99.9=200us")
	require.NoError(t, err)
	assert.Equal(t, SLO{Percentile: 99.9, Max: 200 * time.Microsecond}, s)
	assert.Equal(t, "p99.9=200µs", s.str())
	again, err := Parse(s.str())
	require.NoError(t, err)
	assert.Equal(t, s, again)
	for _, bad := range []string{"", "99=1ms", "p=1ms", "p100=1ms", "p0=1ms", "p99=", "p99=-1ms", "p99=fast", "pNaN=1ms"} {
		_, err := Parse(bad)
		assert.ErrorIs(t, err, latency.ErrInvalidConfig, bad)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"p99=1ms", "p99.9=200us", "p50=1s", "p=1", "p99=", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		o, err := Parse(s)
		if err != nil {
			return
		}
		require.Greater(t, o.Percentile, 0.0)
		require.Less(t, o.Percentile, 100.0)
		require.Positive(t, o.Max)
		again, err := Parse(o.str())
		require.NoError(t, err)
		require.Equal(t, o, again)
	})
}

// slowPacketConn is a server socket that takes a millisecond or so per
// message (Go's timers round a sleep up to about 1 ms): a server that
// sustains well under 2,000 messages per second.
type slowPacketConn struct{ net.PacketConn }

func (c slowPacketConn) ReadFrom(b []byte) (int, net.Addr, error) {
	n, a, err := c.PacketConn.ReadFrom(b)
	if err == nil {
		time.Sleep(500 * time.Microsecond)
	}
	return n, a, err
}

// The ping-pong search against an in-process server throttled to under
// 2,000 messages per second: it grows from 500/s until a step breaks the
// SLO, bisects, and reports a rate that met it below one that broke it.
func TestSearchPingPongThrottledServer(t *testing.T) {
	s, err := latency.NewServer(nil)
	require.NoError(t, err)
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	wg.Go(func() { _ = s.ServePacket(ctx, slowPacketConn{pc}) })

	objective := SLO{Percentile: 99, Max: 20 * time.Millisecond}
	res, err := PingPong(context.Background(), pc.LocalAddr().String(), &latency.PingPongConfig{ReadTimeout: 300 * time.Millisecond},
		&Config{SLO: objective, Start: 500, StepDuration: 400 * time.Millisecond, Precision: 0.25, MaxSteps: 9})
	require.NoError(t, err)
	for _, st := range res.Steps {
		t.Logf("%-6s %6.0f/s achieved %6.0f/s p99 %8.0f us, %d requests, %d failed, met %v", st.Phase, st.Rate, st.AchievedRate, float64(st.Percentile)/1e3, st.Requests, st.Failed, st.Met)
		if st.Met {
			assert.LessOrEqual(t, st.Percentile, objective.Max)
			assert.Zero(t, st.Failed)
			assert.Positive(t, st.Requests)
		}
	}
	require.Positive(t, res.BrokeAt, "the throttled server breaks the SLO within the steps")
	assert.Less(t, res.BrokeAt, 8000.0, "it sustains under 2,000/s")
	if res.Rate > 0 {
		assert.Less(t, res.Rate, res.BrokeAt)
	}
	assert.LessOrEqual(t, len(res.Steps), 9)
}

// The JSON of a result keeps the shape it had in package latency: the
// step's percentile in float microseconds under "percentile_us".
func TestResultJSONShape(t *testing.T) {
	r := Result{SLO: "p99=1ms", Rate: 2000, BrokeAt: 4000, Steps: []Step{{Phase: "grow", Rate: 1000,
		AchievedRate: 999.5, Failed: 1, Percentile: 123456 * time.Nanosecond, Requests: 1000, Met: true}}}
	b, err := json.Marshal(r)
	require.NoError(t, err)
	assert.JSONEq(t, `{"slo":"p99=1ms","rate":2000,"broke_at":4000,"steps":[{"phase":"grow","rate":1000,"achieved_rate":999.5,"percentile_us":123.456,"requests":1000,"failed":1,"met":true}]}`, string(b))
	var back Result
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, r, back)

	// The client's share and an unjudged step add their keys.
	r.Steps[0].ClientShare, r.Steps[0].Unjudged, r.Steps[0].Met = 12500*time.Nanosecond, true, false
	b, err = json.Marshal(r)
	require.NoError(t, err)
	assert.JSONEq(t, `{"slo":"p99=1ms","rate":2000,"broke_at":4000,"steps":[{"phase":"grow","rate":1000,"achieved_rate":999.5,"percentile_us":123.456,"requests":1000,"failed":1,"met":false,"client_share_p99_us":12.5,"unjudged":true}]}`, string(b))
	back = Result{}
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, r, back)
}

// FuzzResultJSON: whatever UnmarshalJSON accepts, MarshalJSON writes back
// in a form that reads as the same result.
func FuzzResultJSON(f *testing.F) {
	for _, s := range []string{`{"slo":"p99=1ms","rate":2000,"broke_at":4000,"steps":[{"phase":"grow","rate":1000,"percentile_us":123.456,"met":true}]}`,
		"{}", `{"steps":[{"percentile_us":1e300}]}`, `{"steps":null}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var r Result
		if json.Unmarshal(b, &r) != nil {
			return
		}
		out, err := json.Marshal(r)
		require.NoError(t, err)
		var again Result
		require.NoError(t, json.Unmarshal(out, &again))
		assert.Equal(t, r, again)
	})
}

// Misuse returns errors that name the argument or field, never a panic.
func TestMisuse(t *testing.T) {
	var nilCtx context.Context
	measure := func(context.Context, float64, time.Duration) (Step, error) { return Step{}, nil }
	good := SLO{Percentile: 99, Max: time.Millisecond}
	for want, call := range map[string]func() error{
		"context": func() error { _, err := Search(nilCtx, &Config{SLO: good, Measure: measure}); return err },
		"Config":  func() error { _, err := PingPong(context.Background(), "127.0.0.1:1", nil, nil); return err },
		"SLO":     func() error { _, err := Search(context.Background(), &Config{Measure: measure}); return err },
		"StepDuration": func() error {
			_, err := Search(context.Background(), &Config{SLO: good, Measure: measure, StepDuration: -1})
			return err
		},
		"maximum rate": func() error {
			_, err := Search(context.Background(), &Config{SLO: good, Measure: measure, Start: 2e7})
			return err
		},
	} {
		err := call()
		require.Error(t, err, want)
		assert.Contains(t, err.Error(), want)
	}
}

func TestStepVerdict(t *testing.T) {
	assert.Equal(t, "met", Step{Met: true}.Verdict())
	assert.Equal(t, "unjudged", Step{Unjudged: true}.Verdict())
	assert.Equal(t, "broke", Step{}.Verdict())
}
