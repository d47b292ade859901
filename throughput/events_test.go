package throughput

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func kinds(evs []Event) []string {
	var out []string
	for _, e := range evs {
		if len(out) == 0 || out[len(out)-1] != e.Kind {
			out = append(out, e.Kind)
		}
	}
	return out
}

func TestEvents(t *testing.T) {
	var mu sync.Mutex
	var srvEvents []Event
	addr, _ := startServer(t, &ServerConfig{OnEvent: func(e Event) {
		mu.Lock()
		srvEvents = append(srvEvents, e)
		mu.Unlock()
	}})
	var evs []Event
	res, err := Run(ctxT(t, 20*time.Second), addr, &Config{Duration: 1200 * time.Millisecond, Interval: 500 * time.Millisecond, Streams: 2,
		OnEvent: func(e Event) { evs = append(evs, e) }})
	require.NoError(t, err)
	require.Equal(t, []string{EventStart, EventInterval, EventEnd}, kinds(evs))
	st := evs[0].Result
	require.NotNil(t, st)
	assert.Equal(t, res.Cookie, st.Cookie)
	assert.Equal(t, res.Cookie, evs[0].Cookie)
	require.Len(t, st.Streams, 2, "the start event carries the connected streams")
	for i, s := range st.Streams {
		assert.Equal(t, res.Streams[i].LocalAddr, s.LocalAddr)
		assert.Equal(t, res.Streams[i].RemoteAddr, s.RemoteAddr)
		assert.Zero(t, s.Sent.Bytes)
	}
	assert.Equal(t, res.Start, st.Start)
	assert.Equal(t, len(res.Intervals), len(evs)-2)
	assert.Same(t, res, evs[len(evs)-1].Result)
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(srvEvents) > 0 && srvEvents[len(srvEvents)-1].Kind == EventEnd
	}, 10*time.Second, 20*time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{EventStart, EventInterval, EventEnd}, kinds(srvEvents))
	assert.Equal(t, res.Cookie, srvEvents[0].Cookie)
	assert.Equal(t, "server", srvEvents[0].Result.Role)
}

func TestEventsOnCancel(t *testing.T) {
	addr, _ := startServer(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(700*time.Millisecond, cancel)
	var evs []Event
	res, err := Run(ctx, addr, &Config{Duration: 10 * time.Second, Interval: 200 * time.Millisecond, OnEvent: func(e Event) { evs = append(evs, e) }})
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, []string{EventStart, EventInterval, EventError, EventEnd}, kinds(evs))
	assert.ErrorIs(t, evs[len(evs)-2].Err, context.Canceled)
	assert.Same(t, res, evs[len(evs)-1].Result)
	assert.Positive(t, res.Upload.Sent.Bytes, "the partial result counts what was sent")
}
