package iperf3fmt_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/internal/iperf3doc"
	"github.com/netperfkit/netperfkit/throughput"
	"github.com/netperfkit/netperfkit/throughput/iperf3fmt"
)

// TestMisuse: nil results, writers and configs and a zero TextReport give
// an error or nothing, never a panic.
func TestMisuse(t *testing.T) {
	assert.Empty(t, iperf3fmt.Text(nil))
	_, err := iperf3fmt.JSON(nil)
	require.ErrorContains(t, err, "iperf3fmt: nil Result")
	var zero iperf3fmt.TextReport
	assert.NotPanics(t, func() {
		zero.Connecting("h", 1)
		zero.Connected(throughput.StreamResult{})
		zero.Interval(throughput.Interval{})
		zero.Summary(&throughput.Result{})
		zero.Extras(&throughput.Result{})
		zero.Done()
		rep := iperf3fmt.NewTextReport(nil, nil, iperf3fmt.Options{})
		rep.Summary(nil)
		rep.Extras(nil)
		rep.Interval(throughput.Interval{End: time.Second})
	})
}

// TestJSONShape: the -J document has iperf3's top-level members, and the
// end sums carry the result's bytes.
func TestJSONShape(t *testing.T) {
	tot := throughput.Totals{
		Duration: time.Second,
		Sent:     throughput.Counts{Bytes: 1000, BitsPerSecond: 8000},
		Received: throughput.Counts{Bytes: 900, BitsPerSecond: 7200},
	}
	r := &throughput.Result{Role: "client", Streams: []throughput.StreamResult{{ID: 1, Totals: tot}},
		Upload: &throughput.Summary{Totals: tot, Streams: 1}}
	doc, err := iperf3fmt.JSON(r)
	require.NoError(t, err)
	var m struct {
		Start     map[string]any   `json:"start"`
		Intervals []map[string]any `json:"intervals"`
		End       struct {
			SumSent     struct{ Bytes int64 } `json:"sum_sent"`
			SumReceived struct{ Bytes int64 } `json:"sum_received"`
		} `json:"end"`
	}
	require.NoError(t, json.Unmarshal(doc, &m))
	assert.NotNil(t, m.Start)
	assert.NotNil(t, m.Intervals)
	assert.Equal(t, int64(1000), m.End.SumSent.Bytes)
	assert.Equal(t, int64(900), m.End.SumReceived.Bytes)
}

// TestSliver: a short, empty last interval is left out; one that moved
// data or lasted a tenth of the interval is not.
func TestSliver(t *testing.T) {
	short := throughput.Interval{Start: time.Second, End: time.Second + 50*time.Millisecond}
	assert.True(t, iperf3doc.Sliver(short, time.Second))
	assert.False(t, iperf3doc.Sliver(short, 100*time.Millisecond), "half the interval is not a sliver")
	moved := short
	moved.Streams = []throughput.StreamInterval{{Counts: throughput.Counts{Bytes: 1}}}
	assert.False(t, iperf3doc.Sliver(moved, time.Second))

	var b bytes.Buffer
	iperf3fmt.NewTextReport(&b, &throughput.Config{}, iperf3fmt.Options{}).Interval(short)
	assert.Empty(t, b.String(), "TextReport leaves a sliver out")
}
