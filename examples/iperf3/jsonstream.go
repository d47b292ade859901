package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	"github.com/netperfkit/netperfkit/throughput"
	"github.com/netperfkit/netperfkit/throughput/iperf3fmt"
)

// jsonStream writes 3.21's --json-stream output: one {"event": ..., "data":
// ...} object per line for start, each interval, error and end. The data
// objects are the parts of the library's -J document (iperf3fmt.JSON),
// so the stream and -J agree. Not safe for concurrent use.
type jsonStream struct {
	w       io.Writer
	skel    throughput.Result // what is known before the test: settings and peer
	every   time.Duration     // -i
	started bool
}

func newJSONStream(w io.Writer, o *options, addr string) *jsonStream {
	return &jsonStream{w: w, every: o.cfg.Interval, skel: throughput.Result{
		Role: "client", Config: o.cfg, RemoteAddr: addr, Start: time.Now(),
	}}
}

func (j *jsonStream) event(name string, data any) {
	b, err := json.Marshal(struct {
		Event string `json:"event"`
		Data  any    `json:"data"`
	}{name, data})
	if err != nil {
		b, _ = json.Marshal(map[string]string{"event": "error", "data": err.Error()})
	}
	fmt.Fprintf(j.w, "%s\n", b)
}

// part renders r with IperfJSON and returns one top-level member.
func part(r *throughput.Result, key string) (json.RawMessage, error) {
	doc, err := iperf3fmt.JSON(r)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(doc, &m); err != nil {
		return nil, err
	}
	return m[key], nil
}

// start emits the start event from what the library reports when the
// streams are connected: settings, cookie and each stream's addresses.
func (j *jsonStream) start(r *throughput.Result) {
	if j.started {
		return
	}
	j.started = true
	if r != nil {
		j.skel = *r
	}
	data, err := part(&j.skel, "start")
	if err != nil {
		j.error(err.Error())
		return
	}
	j.event("start", data)
}

func (j *jsonStream) interval(iv throughput.Interval) {
	if iperf3fmt.Sliver(iv, j.every) {
		return
	}
	j.start(nil)
	r := j.skel
	r.Intervals = []throughput.Interval{iv}
	raw, err := part(&r, "intervals")
	if err != nil {
		j.error(err.Error())
		return
	}
	var ivs []json.RawMessage
	if err := json.Unmarshal(raw, &ivs); err != nil || len(ivs) != 1 {
		j.error(fmt.Sprintf("interval: %v", err))
		return
	}
	j.event("interval", ivs[0])
}

// end emits the end event from the final (or, after an interrupt, partial)
// result.
func (j *jsonStream) end(r *throughput.Result) {
	j.start(nil)
	data, err := part(r, "end")
	if err != nil {
		j.error(err.Error())
		return
	}
	j.event("end", data)
}

func (j *jsonStream) error(msg string) { j.event("error", msg) }

// hostPort splits "host:port" into host and numeric port for messages.
func hostPort(addr string) (string, int) {
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		return addr, 0
	}
	n, _ := strconv.Atoi(p)
	return h, n
}
