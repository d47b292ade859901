package iperf3fmt

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/netperfkit/netperfkit/internal/iperf3doc"
	"github.com/netperfkit/netperfkit/throughput"
)

// JSONStream writes iperf3 3.21's --json-stream output: one {"event": ...,
// "data": ...} object per line for start, each interval, error and end,
// fed from a test's events (throughput.Config.OnEvent or
// ServerConfig.OnEvent). The data objects are the parts of the -J document
// (JSON), so the stream and -J agree. It is not safe for concurrent use;
// throughput delivers a test's events from one goroutine. The zero
// JSONStream writes nothing; make one with NewJSONStream.
type JSONStream struct {
	w       io.Writer
	skel    throughput.Result // what is known before the test: settings and peer
	every   time.Duration
	started bool
}

// NewJSONStream returns a stream written to w. every is the test's
// reporting interval (Config.Interval; 0 means 1 s), by which Interval
// leaves out a sliver (a short, empty last interval); skel, when not nil, is what is known before the
// test starts (settings and peer), for a start event that Start did not
// replace.
func NewJSONStream(w io.Writer, every time.Duration, skel *throughput.Result) *JSONStream {
	j := &JSONStream{w: w, every: every}
	if skel != nil {
		j.skel = *skel
	}
	return j
}

func (j *JSONStream) event(name string, data any) {
	if j == nil || j.w == nil {
		return
	}
	b, err := json.Marshal(struct {
		Event string `json:"event"`
		Data  any    `json:"data"`
	}{name, data})
	if err != nil {
		b, _ = json.Marshal(map[string]string{"event": "error", "data": err.Error()})
	}
	fmt.Fprintf(j.w, "%s\n", b)
}

// part renders r with JSON and returns one top-level member.
func part(r *throughput.Result, key string) (json.RawMessage, error) {
	doc, err := JSON(r)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(doc, &m); err != nil {
		return nil, err
	}
	return m[key], nil
}

// Start writes the start event from what throughput reports when the
// streams are connected (settings, cookie and each stream's addresses;
// nil: the skeleton NewJSONStream was given). Only the first call writes.
func (j *JSONStream) Start(r *throughput.Result) {
	if j == nil || j.started {
		return
	}
	j.started = true
	if r != nil {
		j.skel = *r
	}
	data, err := part(&j.skel, "start")
	if err != nil {
		j.Error(err.Error())
		return
	}
	j.event("start", data)
}

// Interval writes one interval event, after the start event if none was
// written; it leaves out a sliver, as 3.21 does.
func (j *JSONStream) Interval(iv throughput.Interval) {
	if j == nil || iperf3doc.Sliver(iv, j.every) {
		return
	}
	j.Start(nil)
	r := j.skel
	r.Intervals = []throughput.Interval{iv}
	raw, err := part(&r, "intervals")
	if err != nil {
		j.Error(err.Error())
		return
	}
	var ivs []json.RawMessage
	if err := json.Unmarshal(raw, &ivs); err != nil || len(ivs) != 1 {
		j.Error(fmt.Sprintf("interval: %v", err))
		return
	}
	j.event("interval", ivs[0])
}

// End writes the end event from the final (or, after an interrupt,
// partial) result, after the start event if none was written. A nil r
// writes an empty end object and no start, as 3.21 ends a stream whose
// test never began.
func (j *JSONStream) End(r *throughput.Result) {
	if j == nil {
		return
	}
	if r == nil {
		j.event("end", struct{}{})
		return
	}
	j.Start(nil)
	data, err := part(r, "end")
	if err != nil {
		j.Error(err.Error())
		return
	}
	j.event("end", data)
}

// Error writes an error event with msg, as 3.21 words it ("error - ...").
func (j *JSONStream) Error(msg string) { j.event("error", msg) }
