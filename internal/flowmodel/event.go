package flowmodel

// EventKind names an Event, as iperf3 3.21's --json-stream names its events.
type EventKind string

// The kinds of Event, in the order a test reports them.
const (
	// EventStart: the data streams are connected and the test begins.
	EventStart EventKind = "start"
	// EventInterval: one interval report.
	EventInterval EventKind = "interval"
	// EventError: the test failed or was cancelled; an EventEnd follows.
	EventError EventKind = "error"
	// EventEnd: the test is over; the last event of every test.
	EventEnd EventKind = "end"
)

// Event is one step of a test, as Config.OnEvent and ServerConfig.OnEvent
// receive it: the same events, in the same order, as iperf3 3.21's
// --json-stream output (throughput/iperf3fmt.JSON renders the "start" and "end" objects of
// Result, and the interval objects of Interval).
type Event struct {
	Kind EventKind
	// Cookie is the test's cookie: it tells apart the events of
	// concurrent tests on a server.
	Cookie string
	// Result is the test so far for EventStart (settings, addresses,
	// cookie, start time and each stream's addresses, no counts) and the
	// final or partial result for EventEnd; nil otherwise.
	Result *Result
	// Interval is set for EventInterval.
	Interval *Interval
	// Err is set for EventError.
	Err error
}
