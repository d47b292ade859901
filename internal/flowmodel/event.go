package flowmodel

// The kinds of Event (Event.Kind), in the order a test reports them, as
// iperf3 3.21's --json-stream names its events.
const (
	// EventStart: the data streams are connected and the test begins.
	EventStart = "start"
	// EventInterval: one interval report.
	EventInterval = "interval"
	// EventError: the test failed or was cancelled; an EventEnd follows.
	EventError = "error"
	// EventEnd: the test is over; the last event of every test.
	EventEnd = "end"
)

// Event is one step of a test, as Config.OnEvent and ServerConfig.OnEvent
// receive it: the same events, in the same order, as iperf3 3.21's
// --json-stream output (throughput/iperf3fmt.JSON renders the "start" and "end" objects of
// Result, and the interval objects of Interval).
type Event struct {
	// Kind is one of EventStart, EventInterval, EventError and EventEnd.
	Kind string
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
