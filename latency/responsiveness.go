package latency

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	wire "github.com/netperfkit/netperfkit/internal/sockperfwire"
)

// Defaults of ResponsivenessConfig.
const (
	defaultRespDuration  = 10 * time.Second
	defaultProbeRate     = 10
	defaultProbeTimeout  = 2 * time.Second
	respNewConnWorkers   = 8
	respEstablishWorkers = 1
)

// ResponsivenessConfig configures Responsiveness. A nil config means the
// defaults.
type ResponsivenessConfig struct {
	// Network is "tcp" (the zero value), "tcp4" or "tcp6".
	Network string
	// Duration is how long probes are sent. Zero means 10 s.
	Duration time.Duration
	// ProbeRate is the number of probes of each kind per second. Zero
	// means 10.
	ProbeRate float64
	// Timeout bounds each probe. Zero means 2 s.
	Timeout time.Duration
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
	// from each probe's intended start (probes run open-loop on Schedule).
	Latency Summary `json:"latency"`
	// TrimmedMeanUs is the mean of the fastest 95% (RPMTrim), and RPM 60 s
	// divided by it; both are zero when no probe succeeded.
	TrimmedMeanUs float64 `json:"trimmed_mean_us"`
	RPM           float64 `json:"rpm"`
	// Histogram holds the successful round trips in nanoseconds.
	Histogram *hdrhistogram.Histogram `json:"-"`
}

// ProbeStatsOf returns the probe statistics of a schedule of probes: the
// response times of those that succeeded, their trimmed mean and RPM, and
// the number that failed. A nil schedule gives the zero value.
func ProbeStatsOf(s *ScheduleResult) ProbeStats {
	if s == nil {
		return ProbeStats{}
	}
	tm := TrimmedMean(s.SuccessResponseHistogram, RPMTrim)
	return ProbeStats{Probes: s.SuccessResponse.Observations, Errors: s.Failed, Latency: s.SuccessResponse,
		TrimmedMeanUs: float64(tm) / 1e3, RPM: RPM(tm), Histogram: s.SuccessResponseHistogram}
}

// ResponsivenessResult is the outcome of Responsiveness.
type ResponsivenessResult struct {
	// NewConnection probes each open a TCP connection, send one echo
	// request and read its reply, then close.
	NewConnection ProbeStats `json:"new_connection"`
	// NewConnectionPhasesUs holds the 95% trimmed means of their phases:
	// "connect" and "request" (the first echo).
	NewConnectionPhasesUs map[string]float64 `json:"new_connection_phases_trimmed_mean_us"`
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

// Responsiveness measures the responsiveness of the path to a
// sockperf-compatible TCP echo server at addr (a Server of this package or
// `sockperf server --tcp`), RPM-style: for cfg.Duration, probes run
// open-loop at ProbeRate per second on new connections (TCP connect + first
// echo) and on one established connection. Run it while flows load the
// path (throughput.Run in another goroutine) to get responsiveness under
// load. Probe failures are counted; it returns an error only when the
// established connection cannot be opened or the configuration is invalid,
// and when ctx ends, within about 100 ms the result so far with ctx.Err().
func Responsiveness(ctx context.Context, addr string, cfg *ResponsivenessConfig) (*ResponsivenessResult, error) {
	var c ResponsivenessConfig
	if cfg != nil {
		c = *cfg
	}
	if c.Network == "" {
		c.Network = "tcp"
	}
	if c.Network != "tcp" && c.Network != "tcp4" && c.Network != "tcp6" {
		return nil, fmt.Errorf("%w: responsiveness network %q is not tcp", ErrInvalidConfig, c.Network)
	}
	if c.Duration <= 0 {
		c.Duration = defaultRespDuration
	}
	if c.ProbeRate <= 0 {
		c.ProbeRate = defaultProbeRate
	}
	if c.Timeout <= 0 {
		c.Timeout = defaultProbeTimeout
	}
	est := &estConn{cfg: &c, addr: addr}
	if err := est.dial(ctx); err != nil {
		return nil, err
	}
	defer est.close()
	sc := func(workers int) *ScheduleConfig {
		return &ScheduleConfig{Rate: c.ProbeRate, Workers: workers, Duration: c.Duration, Spin: -1}
	}
	phases := map[string]*Recorder{}
	for _, name := range []string{"connect", "request"} {
		phases[name], _ = NewRecorder(nil) // the default configuration is valid
	}
	var (
		wg    sync.WaitGroup
		fresh *ScheduleResult
	)
	wg.Go(func() {
		fresh, _ = Schedule(ctx, sc(respNewConnWorkers), func(ctx context.Context, _ *Request) error {
			return newConnProbe(ctx, &c, addr, phases)
		})
	})
	estab, _ := Schedule(ctx, sc(respEstablishWorkers), est.probe)
	wg.Wait()
	res := &ResponsivenessResult{NewConnection: ProbeStatsOf(fresh), Established: ProbeStatsOf(estab),
		NewConnectionPhasesUs: map[string]float64{}}
	for name, rec := range phases {
		if rec.Count() > 0 {
			res.NewConnectionPhasesUs[name] = float64(TrimmedMean(rec.Snapshot(), RPMTrim)) / 1e3
		}
	}
	conn, req, self := res.NewConnectionPhasesUs["connect"], res.NewConnectionPhasesUs["request"], res.Established.TrimmedMeanUs
	if conn > 0 && req > 0 && self > 0 {
		res.RPM = RPM(time.Duration(((conn+req)/4 + self/2) * 1e3))
	}
	return res, ctx.Err()
}

// errBrokenConn fails an established probe that found no connection.
var errBrokenConn = errors.New("latency: the established probe connection failed earlier")

// estConn is the established connection of Responsiveness.
type estConn struct {
	cfg  *ResponsivenessConfig
	addr string

	mu  sync.Mutex // one probe at a time
	tr  *netTransport
	seq uint64
}

// dial connects within Timeout: a probe holds e.mu while it dials, and
// the run waits for its probes.
func (e *estConn) dial(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.Timeout)
	defer cancel()
	tr, err := dialNet(ctx, e.cfg.Network, e.addr, defaultMessageSize, e.cfg.Timeout)
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
func (e *estConn) probe(ctx context.Context, _ *Request) error {
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
	err := echo(e.tr, e.seq, e.cfg.Timeout)
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
// recording the connect and request phases.
func newConnProbe(ctx context.Context, c *ResponsivenessConfig, addr string, phases map[string]*Recorder) error {
	ctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	t0 := time.Now()
	var d net.Dialer
	nc, err := d.DialContext(ctx, c.Network, addr)
	if err != nil {
		return fmt.Errorf("latency: connect: %w", err)
	}
	t1 := time.Now()
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	defer stop()
	defer nc.Close()
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	tr := &netTransport{conn: nc, timeout: c.Timeout, fr: wire.NewFrameReader(nc, defaultMessageSize)}
	if err := echo(tr, 1, c.Timeout); err != nil {
		return err
	}
	t2 := time.Now()
	phases["connect"].Record(t1.Sub(t0))
	phases["request"].Record(t2.Sub(t1))
	return nil
}

// echo sends one ping-pong message with sequence number seq on tr and
// waits for its reply.
func echo(tr transport, seq uint64, timeout time.Duration) error {
	msg := make([]byte, defaultMessageSize)
	wire.Header{Seq: seq, Flags: wire.FlagClient | wire.FlagPong, Length: uint32(len(msg))}.Put(msg)
	if err := tr.write(msg); err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	for {
		m, err := tr.read(deadline)
		if err != nil {
			return err
		}
		h, err := wire.DecodeHeader(m)
		if err == nil && h.Flags&wire.FlagClient == 0 && h.Seq == seq {
			return nil
		}
	}
}
