// Package responsiveness measures a path's responsiveness the way the IETF
// responsiveness draft (draft-ietf-ippm-responsiveness) does: round trips
// per minute (RPM) from probes on new connections and on an established
// one, run open-loop with latency.Schedule against a sockperf-compatible
// TCP echo server (a latency.Server or `sockperf server --tcp`).
//
// Entry points: Run probes a server for a while (load the path beside it to
// get responsiveness under load); ProbeStatsOf turns any schedule of probes
// into the draft's statistics. Package cache and package throughput report
// their own probes with ProbeStats.
//
// It imports hdrhistogram-go and, through package latency, x/sys; it
// follows netperfkit's conventions (docs/conventions.md): durations are
// time.Duration in Go and float microseconds in JSON.
package responsiveness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/netperfkit/netperfkit/internal/kstamp"
	"github.com/netperfkit/netperfkit/internal/rpm"
	wire "github.com/netperfkit/netperfkit/internal/sockperfwire"
	"github.com/netperfkit/netperfkit/latency"

	"github.com/netperfkit/netperfkit/latency/internal/usec"
)

// Defaults of Config.
const (
	defaultRespDuration  = 10 * time.Second
	defaultProbeRate     = 10
	defaultProbeTimeout  = 2 * time.Second
	respNewConnWorkers   = 8
	respEstablishWorkers = 1
)

// Config configures Run. A nil config means the defaults.
type Config struct {
	// Duration is how long probes are sent. Zero means 10 s.
	Duration time.Duration
	// ProbeRate is the number of probes of each kind per second. Zero
	// means 10.
	ProbeRate float64
	// Probes dial "tcp" (an IPv6 literal in addr gives IPv6), and each is
	// bounded by 2 s.

	network string        // "tcp" when empty; "tcp4", "tcp6" (tests)
	timeout time.Duration // 2 s when zero (tests)
}

func (c *Config) normalize() (Config, error) {
	var n Config
	if c != nil {
		n = *c
	}
	if n.network == "" {
		n.network = "tcp"
	}
	switch {
	case n.network != "tcp" && n.network != "tcp4" && n.network != "tcp6":
		return n, fmt.Errorf("%w: network %q is not tcp", latency.ErrInvalidConfig, n.network)
	case n.Duration < 0:
		return n, fmt.Errorf("%w: Duration %v is negative", latency.ErrInvalidConfig, n.Duration)
	case n.ProbeRate < 0 || math.IsNaN(n.ProbeRate) || math.IsInf(n.ProbeRate, 0):
		return n, fmt.Errorf("%w: ProbeRate %v is not a positive rate", latency.ErrInvalidConfig, n.ProbeRate)
	case n.timeout < 0:
		return n, fmt.Errorf("%w: timeout %v is negative", latency.ErrInvalidConfig, n.timeout)
	}
	if n.Duration == 0 {
		n.Duration = defaultRespDuration
	}
	if n.ProbeRate == 0 {
		n.ProbeRate = defaultProbeRate
	}
	if n.timeout == 0 {
		n.timeout = defaultProbeTimeout
	}
	return n, nil
}

// ProbeStats is the distribution of one kind of responsiveness probe, in
// the form of the IETF responsiveness draft. Only the probes that succeeded
// are measured: a failed probe may have failed at once (a refused or broken
// connection) or at its timeout, and neither says how long a round trip
// takes. Read Errors beside RPM: a path that loses most probes can show a
// high RPM from the few that got through.
type ProbeStats struct {
	// Probes counts the probes that succeeded, which Latency summarises;
	// Errors those that failed.
	Probes int64 `json:"probes"`
	Errors int64 `json:"errors"`
	// Latency summarises the successful probes' round trips, measured
	// from each probe's intended start (probes run open-loop on
	// latency.Schedule).
	Latency latency.Summary `json:"latency"`
	// TrimmedMean is the mean of the fastest 95%, and RPM 60 s divided by
	// it; both are zero when no probe succeeded. JSON has the mean in
	// microseconds ("trimmed_mean_us").
	TrimmedMean time.Duration `json:"-"`
	RPM         float64       `json:"rpm"`
	// Histogram holds the successful round trips in nanoseconds.
	Histogram *hdrhistogram.Histogram `json:"-"`
}

// fields is the statistics' wire form, for MarshalJSON and UnmarshalJSON
// alike: the trimmed mean in float microseconds.
func (p *ProbeStats) fields() []usec.Field {
	v := usec.Value
	return []usec.Field{v("probes", &p.Probes), v("errors", &p.Errors), v("latency", &p.Latency),
		usec.Us("trimmed_mean_us", &p.TrimmedMean), v("rpm", &p.RPM)}
}

// MarshalJSON writes the statistics with the trimmed mean in float
// microseconds, as netperfkit has always written them.
func (p ProbeStats) MarshalJSON() ([]byte, error) { return usec.Marshal(p.fields()...) }

// UnmarshalJSON reads what MarshalJSON writes (without the histogram).
func (p *ProbeStats) UnmarshalJSON(b []byte) error {
	if p == nil {
		return errors.New("responsiveness: probe stats: UnmarshalJSON into a nil pointer")
	}
	*p = ProbeStats{}
	if err := usec.Unmarshal(b, p.fields()...); err != nil {
		return fmt.Errorf("responsiveness: probe stats: %w", err)
	}
	return nil
}

func microseconds(d time.Duration) float64 { return usec.Micros(d) }

// ProbeStatsOf returns the probe statistics of a schedule of probes: the
// response times of those that succeeded, their trimmed mean and RPM, and
// the number that failed. A nil schedule gives the zero value.
func ProbeStatsOf(s *latency.ScheduleResult) ProbeStats {
	if s == nil {
		return ProbeStats{}
	}
	tm := rpm.TrimmedMean(s.SuccessResponseHistogram, rpm.Trim)
	return ProbeStats{Probes: s.SuccessResponse.Observations, Errors: s.Failed, Latency: s.SuccessResponse,
		TrimmedMean: tm, RPM: rpm.RPM(tm), Histogram: s.SuccessResponseHistogram}
}

// Result is the outcome of Run.
type Result struct {
	// NewConnection probes each open a TCP connection, send one echo
	// request and read its reply, then close.
	NewConnection ProbeStats `json:"new_connection"`
	// NewConnectionPhases holds the 95% trimmed means of their phases:
	// "connect" and "request" (the first echo). JSON has them in
	// microseconds ("new_connection_phases_trimmed_mean_us").
	NewConnectionPhases map[string]time.Duration `json:"-"`
	// Established probes send one echo request each on one connection
	// opened at the start. A probe that fails leaves the stream out of step
	// (its reply may still come), so it closes the connection and opens a
	// new one for the next; a probe that finds no connection (the reopening
	// failed) tries again and counts as failed.
	Established ProbeStats `json:"established_connection"`
	// RPM combines them as the IETF responsiveness draft does without TLS:
	// 60 s divided by 1/4 x (connect + request) + 1/2 x established, each a
	// 95% trimmed mean of the successful probes; it is zero unless both
	// kinds had successful probes. The draft's self probes travel on the
	// loaded connections; here the established connection is the probe's
	// own, so load it with flows beside it (throughput.Run) and read
	// Established as the latency those flows add to a waiting connection.
	RPM float64 `json:"rpm"`
}

// fields is the result's wire form, for MarshalJSON and UnmarshalJSON
// alike, with phases the phases in float microseconds.
func (r *Result) fields(phases *map[string]float64) []usec.Field {
	v := usec.Value
	return []usec.Field{v("new_connection", &r.NewConnection), v("new_connection_phases_trimmed_mean_us", phases),
		v("established_connection", &r.Established), v("rpm", &r.RPM)}
}

// MarshalJSON writes the result with the phases in float microseconds, as
// netperfkit has always written it.
func (r Result) MarshalJSON() ([]byte, error) {
	var phases map[string]float64
	if r.NewConnectionPhases != nil {
		phases = make(map[string]float64, len(r.NewConnectionPhases))
		for k, d := range r.NewConnectionPhases {
			phases[k] = microseconds(d)
		}
	}
	return usec.Marshal(r.fields(&phases)...)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (r *Result) UnmarshalJSON(b []byte) error {
	if r == nil {
		return errors.New("responsiveness: result: UnmarshalJSON into a nil pointer")
	}
	*r = Result{}
	var phases map[string]float64
	if err := usec.Unmarshal(b, r.fields(&phases)...); err != nil {
		return fmt.Errorf("responsiveness: result: %w", err)
	}
	if phases != nil {
		r.NewConnectionPhases = make(map[string]time.Duration, len(phases))
		for k, us := range phases {
			r.NewConnectionPhases[k] = usec.Duration(us)
		}
	}
	return nil
}

// Run measures the responsiveness of the path to a sockperf-compatible TCP
// echo server at addr (a latency.Server or `sockperf server --tcp`),
// RPM-style: for cfg.Duration, probes run open-loop at ProbeRate per second
// on new connections (TCP connect + first echo) and on one established
// connection. Run it while flows load the path (throughput.Run in another
// goroutine) to get responsiveness under load. Probe failures are counted;
// it returns an error only when the established connection cannot be
// opened or the configuration is invalid (wrapping
// latency.ErrInvalidConfig and naming the field), and when ctx ends,
// within about 100 ms the result so far with ctx.Err(). A run in which no
// probe was answered returns its result (with the failures counted) and an
// error wrapping latency.ErrNoReply. The result is never nil: after an
// error it holds what was measured before it.
func Run(ctx context.Context, addr string, cfg *Config) (*Result, error) {
	if ctx == nil {
		return &Result{NewConnectionPhases: map[string]time.Duration{}}, errors.New("responsiveness: nil context.Context")
	}
	c, err := cfg.normalize()
	if err != nil {
		return &Result{NewConnectionPhases: map[string]time.Duration{}}, err
	}
	est := &estConn{cfg: &c, addr: addr}
	if err := est.dial(ctx); err != nil {
		return &Result{NewConnectionPhases: map[string]time.Duration{}}, err
	}
	defer est.close()
	sc := func(workers int, do func(context.Context, latency.Request) error) *latency.ScheduleConfig {
		return &latency.ScheduleConfig{Rate: c.ProbeRate, Workers: workers, Duration: c.Duration, Spin: -1, Do: do}
	}
	phases := map[string]*latency.Recorder{}
	for _, name := range []string{"connect", "request"} {
		phases[name], _ = latency.NewRecorder(nil) // the default configuration is valid
	}
	var (
		wg    sync.WaitGroup
		fresh *latency.ScheduleResult
	)
	wg.Go(func() {
		fresh, _ = latency.Schedule(ctx, sc(respNewConnWorkers, func(ctx context.Context, r latency.Request) error {
			return newConnProbe(ctx, &c, addr, phases, r.Arrived)
		}))
	})
	estab, _ := latency.Schedule(ctx, sc(respEstablishWorkers, est.probe))
	wg.Wait()
	res := &Result{NewConnection: ProbeStatsOf(fresh), Established: ProbeStatsOf(estab),
		NewConnectionPhases: map[string]time.Duration{}}
	for name, rec := range phases {
		if rec.Count() > 0 {
			res.NewConnectionPhases[name] = rpm.TrimmedMean(rec.Snapshot(), rpm.Trim)
		}
	}
	res.RPM = rpm.Combine(res.NewConnectionPhases["connect"], res.NewConnectionPhases["request"], res.Established.TrimmedMean)
	if err := ctx.Err(); err != nil {
		return res, err
	}
	if res.NewConnection.Probes == 0 && res.Established.Probes == 0 {
		return res, fmt.Errorf("responsiveness: no probe to %s was answered (%d failed): %w",
			addr, res.NewConnection.Errors+res.Established.Errors, latency.ErrNoReply)
	}
	return res, nil
}

// errBrokenConn fails an established probe that found no connection.
var errBrokenConn = errors.New("responsiveness: the established probe connection failed earlier")

// estConn is the established connection of Responsiveness.
type estConn struct {
	cfg  *Config
	addr string

	mu  sync.Mutex // one probe at a time
	tr  *conn
	seq uint64
}

// dial connects within the timeout: a probe holds e.mu while it dials, and
// the run waits for its probes.
func (e *estConn) dial(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.timeout)
	defer cancel()
	tr, err := dial(ctx, e.cfg.network, e.addr)
	if err != nil {
		return err
	}
	e.tr = tr
	return nil
}

// probe echoes one message on the connection. After a failure the stream
// may still carry the late reply, so the connection is replaced; the
// reconnection is part of the failed probe, not of the next one's round
// trip (though the next may wait for it, which its response time shows).
func (e *estConn) probe(ctx context.Context, r latency.Request) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.tr == nil {
		err := e.dial(ctx)
		if err == nil {
			err = errors.New("reconnected")
		}
		return fmt.Errorf("%w: %w", errBrokenConn, err)
	}
	stop := context.AfterFunc(ctx, e.tr.abort)
	defer stop()
	e.seq++
	err := e.tr.echo(e.seq, e.cfg.timeout, r.Sent, r.Arrived)
	if err != nil {
		e.tr.close()
		e.tr = nil
		if ctx.Err() == nil {
			_ = e.dial(ctx) // on failure the next probe tries again
		}
	}
	return err
}

func (e *estConn) close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.tr != nil {
		e.tr.close()
		e.tr = nil
	}
}

// newConnProbe opens a connection, echoes one message and closes it,
// recording the connect and request phases. The probe starts with its
// dial, the network's and the server's time, so only the reply's arrival
// goes to arrived (when not nil).
func newConnProbe(ctx context.Context, c *Config, addr string, phases map[string]*latency.Recorder, arrived *time.Time) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	t0 := time.Now()
	tr, err := dial(ctx, c.network, addr)
	if err != nil {
		return err
	}
	t1 := time.Now()
	stop := context.AfterFunc(ctx, tr.abort)
	defer stop()
	defer tr.close()
	if err := tr.echo(1, c.timeout, nil, arrived); err != nil {
		return err
	}
	t2 := time.Now()
	phases["connect"].Record(t1.Sub(t0))
	phases["request"].Record(t2.Sub(t1))
	return nil
}

// conn is a probe's TCP connection to a sockperf-compatible server.
type conn struct {
	c  net.Conn
	fr *wire.FrameReader
	// kr, when the socket allows, reads replies with their arrival in the
	// kernel (SO_TIMESTAMPNS), so that the schedule tells the probe's own
	// wake-up from the path's time. It waits in the netpoller: probes share
	// the process, and its Ps, with the flows that load the path, and a
	// probe asleep in poll(2) would hold a P for a loaded round trip.
	kr *kstamp.Reader
}

// dial connects with Nagle's algorithm off, as sockperf's TCP client does.
func dial(ctx context.Context, network, addr string) (*conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, fmt.Errorf("responsiveness: connect: %w", err)
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	t := &conn{c: c}
	var rd io.Reader = c
	if kr, ok := kstamp.New(c); ok {
		kr.Netpoller = true
		t.kr, rd = kr, kr
	}
	t.fr = wire.NewFrameReader(rd, wire.HeaderSize)
	return t, nil
}

func (t *conn) abort() { t.c.Close() }
func (t *conn) close() { t.c.Close() }

// echo sends one ping-pong message with sequence number seq and waits up
// to timeout for its reply. Non-nil sent and arrived receive when the
// message left and when its reply reached the kernel (latency.Request's
// Sent and Arrived), the latter only when the socket tells it.
func (t *conn) echo(seq uint64, timeout time.Duration, sent, arrived *time.Time) error {
	msg := make([]byte, wire.HeaderSize)
	wire.Header{Seq: seq, Flags: wire.FlagClient | wire.FlagPong, Length: uint32(len(msg))}.Put(msg)
	deadline := time.Now().Add(timeout)
	if err := t.c.SetDeadline(deadline); err != nil {
		return fmt.Errorf("responsiveness: %w", err)
	}
	if sent != nil {
		*sent = time.Now()
	}
	if _, err := t.c.Write(msg); err != nil {
		return fmt.Errorf("responsiveness: write: %w", err)
	}
	for {
		h, _, err := t.fr.Next()
		if err != nil {
			return fmt.Errorf("responsiveness: read: %w", err)
		}
		if h.Flags&wire.FlagClient == 0 && h.Seq == seq {
			if arrived != nil && t.kr != nil {
				*arrived = t.kr.Arrived()
			}
			return nil
		}
	}
}
