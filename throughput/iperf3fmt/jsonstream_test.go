package iperf3fmt_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/throughput"
	"github.com/netperfkit/netperfkit/throughput/iperf3fmt"
)

// events decodes a --json-stream output's event names.
func events(t *testing.T, out string) []string {
	t.Helper()
	var names []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var e struct {
			Event string          `json:"event"`
			Data  json.RawMessage `json:"data"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &e), line)
		require.NotEmpty(t, e.Data, line)
		names = append(names, e.Event)
	}
	return names
}

// TestJSONStream writes a test's events as 3.21's stream does: start once,
// the intervals but not a sliver, the error, the end.
func TestJSONStream(t *testing.T) {
	var b bytes.Buffer
	js := iperf3fmt.NewJSONStream(&b, time.Second, &throughput.Result{Role: "client"})
	iv := throughput.Interval{End: time.Second, Streams: []throughput.StreamInterval{{ID: 1, Sender: true, Counts: throughput.Counts{Bytes: 10}}}}
	js.Interval(iv) // writes the skeleton's start first
	js.Start(&throughput.Result{Role: "client"})
	js.Interval(throughput.Interval{Start: time.Second, End: time.Second + time.Millisecond}) // a sliver
	js.Error("error - boom")
	js.End(&throughput.Result{Role: "client"})
	assert.Equal(t, []string{"start", "interval", "error", "end"}, events(t, b.String()))

	b.Reset()
	iperf3fmt.NewJSONStream(&b, 0, nil).End(nil)
	assert.Equal(t, "{\"event\":\"end\",\"data\":{}}\n", b.String(), "an empty end, no start")

	var zero *iperf3fmt.JSONStream
	assert.NotPanics(t, func() {
		zero.Start(nil)
		zero.Interval(iv)
		zero.Error("x")
		zero.End(nil)
		var z iperf3fmt.JSONStream
		z.Error("x")
		z.End(nil)
	})
}
