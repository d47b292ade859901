package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/netperfkit/netperfkit/throughput"
)

// 3.21's debug levels (src/iperf.h); -d alone is debugMax.
const (
	debugError = 1 // failures
	debugWarn  = 2 // and refused connections
	debugInfo  = 3 // and the test's state changes
	debugAll   = 4 // and its parameters, every interval and the results
)

// debugLog writes -d's lines to stdout, as 3.21 writes its own, from what
// the library reports through OnEvent and OnFailure: the library does not
// expose the protocol's states one by one, so a state line stands for the
// states an event implies ("streams connected" means 9, 10, 1 and 2 have
// passed). Safe for concurrent use: a server's tests report at once.
type debugLog struct {
	mu    sync.Mutex
	w     io.Writer
	level int
	role  string // "client" or "server"
}

func newDebugLog(w io.Writer, level int, role string) *debugLog {
	return &debugLog{w: w, level: level, role: role}
}

func (d *debugLog) printf(level int, format string, a ...any) {
	if d == nil || d.level < level {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	fmt.Fprintf(d.w, format, a...)
}

// event logs one test event.
func (d *debugLog) event(e throughput.Event) {
	if d == nil || d.level == 0 {
		return
	}
	switch e.Kind {
	case throughput.EventStart:
		r := e.Result
		d.printf(debugInfo, "State change: %s reached 1-TEST_START and 2-TEST_RUNNING (after 9-PARAM_EXCHANGE, 10-CREATE_STREAMS), cookie %s\n", d.role, e.Cookie)
		if d.level >= debugAll {
			verb := "send_parameters"
			if d.role == "server" {
				verb = "get_parameters"
			}
			b, _ := json.MarshalIndent(r.Config, "", "\t")
			d.printf(debugAll, "%s (as netperfkit's throughput.Config):\n%s\n", verb, b)
			for _, s := range r.Streams {
				d.printf(debugAll, "stream %d: local %s remote %s reverse %t\n", s.ID, s.LocalAddr, s.RemoteAddr, s.Reverse)
			}
		}
	case throughput.EventInterval:
		iv := e.Interval
		for _, s := range iv.Streams {
			d.printf(debugAll, "interval %.3f-%.3f stream %d sender %t: %d bytes, %d packets, omitted %t\n",
				iv.Start.Seconds(), iv.End.Seconds(), s.ID, s.Sender, s.Bytes, s.Packets, iv.Omitted)
		}
	case throughput.EventError:
		d.printf(debugError, "%s test %s failed: %v\n", d.role, e.Cookie, e.Err)
	case throughput.EventEnd:
		d.printf(debugInfo, "State change: %s test %s over (13-EXCHANGE_RESULTS to 16-IPERF_DONE, or ended early)\n", d.role, e.Cookie)
		if r := e.Result; r != nil && d.level >= debugAll {
			d.printf(debugAll, "results: congestion %q, remote congestion %q, cpu %+v, notes %q\n",
				r.Congestion, r.RemoteCongestion, r.CPU, r.Notes)
			for _, s := range r.Streams {
				d.printf(debugAll, "stream %d: sent %d bytes, received %d bytes, retransmits %d\n",
					s.ID, s.Sent.Bytes, s.Received.Bytes, s.Sent.Retransmits)
			}
		}
	}
}

// failure logs a server's refused or failed session.
func (d *debugLog) failure(e *throughput.SessionError) {
	level := debugError
	if e.Reason == "access_denied" || e.Reason == "limit_exceeded" {
		level = debugWarn
	}
	d.printf(level, "session from %v: %s: %v\n", e.Remote, e.Reason, e.Err)
}
