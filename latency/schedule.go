package latency

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Arrival selects how a Schedule spaces the intended start times of its
// requests.
type Arrival int

const (
	// ArrivalUniform starts request i at i/Rate seconds after the start.
	ArrivalUniform Arrival = iota
	// ArrivalPoisson spaces requests by exponentially distributed gaps of
	// mean 1/Rate (a Poisson process), as independent users would arrive.
	ArrivalPoisson
)

// String returns "uniform" or "poisson".
func (a Arrival) String() string {
	switch a {
	case ArrivalUniform:
		return "uniform"
	case ArrivalPoisson:
		return "poisson"
	}
	return fmt.Sprintf("Arrival(%d)", int(a))
}

// ParseArrival parses "uniform" (or "") and "poisson".
func ParseArrival(s string) (Arrival, error) {
	switch s {
	case "", "uniform":
		return ArrivalUniform, nil
	case "poisson":
		return ArrivalPoisson, nil
	}
	return 0, fmt.Errorf("%w: arrival %q is not uniform or poisson", ErrInvalidConfig, s)
}

// Defaults of ScheduleConfig.
const (
	defaultScheduleWorkers = 16
	defaultSpin            = 2 * time.Millisecond
	// kernelSleepAfter is the end of a wait that a kernel-sleeping clock
	// sleeps in the kernel rather than on a Go timer, which fires up to
	// about 1 ms late.
	kernelSleepAfter = 3 * time.Millisecond
	maxLateAfter     = time.Millisecond
)

// ScheduleConfig configures Schedule. Rate and Do are required.
type ScheduleConfig struct {
	// Do runs one request. It is called concurrently by Workers
	// goroutines, with a context that ends when Schedule's ctx does; its
	// error counts the request as failed.
	Do func(ctx context.Context, req Request) error
	// Rate is the number of requests started per second, across all
	// workers. It must be positive.
	Rate float64
	// Arrival spaces the intended start times; zero is ArrivalUniform.
	Arrival Arrival
	// Workers is the number of requests that may be in flight at once.
	// Zero means 16. A request due while every worker is busy waits for
	// the first free one and counts as late.
	Workers int
	// Duration is the window in which requests are started. Zero means
	// 1 s unless Count is set. Requests in flight at its end finish.
	Duration time.Duration
	// Count, when positive, ends the schedule after Count requests
	// (Duration, if also set, still bounds it).
	Count int64
	// LateAfter is how long after its intended start a request may start
	// before it counts as late. Zero means one interval (1/Rate), at most
	// 1 ms.
	LateAfter time.Duration
	// Spin, when positive, is the wait below which the dispatcher
	// busy-waits for the next intended start (only when GOMAXPROCS is
	// above 1; the busy-wait does not yield, so that the other
	// goroutines' network wake-ups are not delayed); longer waits sleep
	// on a Go timer until Spin/2 before the intended start. Zero or
	// negative, the default, never spins: the dispatcher sleeps, the last
	// 3 ms of each wait in the kernel (nanosleep(2) with a 1 us timer
	// slack on linux; a Go timer, up to ~1 ms late, elsewhere), and starts
	// requests tens of microseconds late, which StartLateness and
	// ClientLateness show and the response times leave out. A spinning
	// dispatcher takes a core at any rate above ~500 requests per second:
	// on a 2-core host, the core the server under test needs (issue 31).
	Spin time.Duration
	// Seed seeds ArrivalPoisson's gaps; zero means a fixed default, so
	// schedules repeat.
	Seed uint64
	// Recorder sets the histograms' range and precision (nil means
	// defaults).
	Recorder *RecorderConfig
	// CILevel is the confidence level of the Summary's interval around
	// the average, in percent, exclusive of 0 and 100. Zero, or a value
	// outside (0, 100), means 99; the level used is reported in
	// Summary.CILevel.
	CILevel float64
}

// Request is one scheduled request, given to ScheduleConfig.Do.
type Request struct {
	// Seq numbers requests from 0 in intended order.
	Seq int64
	// Worker is the worker running it, 0 .. Workers-1.
	Worker int
	// Intended is when the schedule meant it to start; Start when it did.
	Intended, Start time.Time
	// Sent and Arrived, when Do sets what they point to, are when the
	// request left the client (its write returned) and when its reply
	// reached the client's kernel (a receive timestamp such as
	// SO_TIMESTAMPNS). They split the client's own share of the time from
	// the server's (see ScheduleResult); Do that does not know them leaves
	// them alone, and Start and Do's return stand in for them.
	Sent, Arrived *time.Time
	// Left, when Do sets what it points to, is when the request had left
	// the client: a kernel transmit timestamp, or the return of its write.
	// The server's time on the request, which queues the requests after
	// it, then runs from Left, not Sent, to Arrived: a client thread
	// descheduled between its send time and its write is not the
	// server's slowness (issue 31). Zero: Sent.
	Left *time.Time

	// queued is how long the request waited for a worker that was still
	// waiting for the reply to an earlier request: queueing, charged to
	// the server.
	queued int64
}

// ScheduleResult is the outcome of Schedule. Response times run from each
// request's intended start to its end, so that a stalled server cannot hide
// the requests it kept from being sent (coordinated omission), less the
// client's own lateness (ClientLateness): a request that waited for a worker
// whose earlier request the server had not yet answered stays charged for the
// wait, one that a late timer or a slow wake-up sent late while a worker was
// free for it does not. A worker counts as busy from a request's charged
// start for the server's time on it (its send to its reply's arrival, by
// Request.Sent and Arrived, or Start to Do's return), so the backlog a
// stalled client sends afterwards is not charged to the server
// (docs/conventions.md). Service times run from each request's actual start.
// Both include failed requests; SuccessResponse leaves them out.
type ScheduleResult struct {
	TargetRate float64 `json:"target_rate"`
	Arrival    string  `json:"arrival"`
	Workers    int     `json:"workers"`
	// Window is the time requests were started in (Duration, or less when
	// Count or cancellation ended it); Elapsed adds the drain.
	Window  time.Duration `json:"window_ns"`
	Elapsed time.Duration `json:"elapsed_ns"`
	// Due counts the intended start times inside the window; Started the
	// requests that started, Unstarted those due that never did (every
	// worker was still busy at the window's end): Due = Started +
	// Unstarted.
	Due       int64 `json:"due"`
	Started   int64 `json:"started"`
	Unstarted int64 `json:"unstarted"`
	// Late counts the started requests that started more than LateAfter
	// after their intended start, because every worker was busy or the
	// dispatcher itself was late. They are run, never skipped.
	Late int64 `json:"late"`
	// Failed counts requests whose function returned an error (requests
	// cut short by ctx are not counted or recorded).
	Failed int64 `json:"failed"`
	// SucceededInWindow counts the requests that succeeded by the end of
	// the window.
	SucceededInWindow int64 `json:"succeeded_in_window"`
	// AchievedRate is Started per second of Window.
	AchievedRate float64 `json:"achieved_rate"`
	// Response, Service and StartLateness (Start - Intended) summarise
	// their histograms.
	Response      Summary `json:"response"`
	Service       Summary `json:"service"`
	StartLateness Summary `json:"start_lateness"`
	// ClientLateness and ReceiveWake are the client's own share, kept
	// apart (docs/conventions.md): ClientLateness runs from the later of a
	// request's intended start and the moment a worker was free for it (its
	// previous reply's arrival) to its send (Request.Sent, or Start), the
	// dispatcher's, the sender's and the previous receive's wake-ups; it is
	// not charged to Response. ReceiveWake runs from its
	// reply's arrival in the kernel (Request.Arrived) to Do's return, the
	// receiver's wake-up and read; it stays in Response and Service, and
	// is empty when Do reports no arrival. ClientLate counts the requests
	// whose ClientLateness exceeded LateAfter: a large count means the
	// client could not keep the schedule, and Response then holds less of
	// the offered load's queueing than the server caused.
	ClientLateness Summary `json:"client_lateness"`
	ReceiveWake    Summary `json:"receive_wake"`
	ClientLate     int64   `json:"client_late"`
	// Reclassified counts the started requests that waited for their
	// worker more than LateAfter longer than the server's own time
	// queued them: they waited behind a request the client itself had
	// sent late (a backlog after a stall), and that wait is counted in
	// ClientLateness instead of Response. They are run and recorded like
	// every other request.
	Reclassified int64 `json:"reclassified"`
	// SuccessResponse summarises the response times of the requests that
	// succeeded: a request that fails fast (a refused connection, a
	// broken one) would otherwise pull Response's statistics down.
	SuccessResponse Summary `json:"success_response"`
	// The histograms of Response, Service and SuccessResponse, in
	// nanoseconds; nil when nothing was recorded.
	ResponseHistogram        *hdrhistogram.Histogram `json:"-"`
	ServiceHistogram         *hdrhistogram.Histogram `json:"-"`
	SuccessResponseHistogram *hdrhistogram.Histogram `json:"-"`
}

// clock is the scheduler's time source: ns since a base. Tests use a fake.
type clock interface {
	base() time.Time
	now() int64
	// waitUntil waits until t; false when ctx ended first.
	waitUntil(ctx context.Context, t int64) bool
	// after returns a channel closed at t (nil: never, for fakes).
	after(t int64) (<-chan struct{}, func())
}

// realClock is the monotonic clock. A kernel-sleeping one (the default)
// sleeps every wait, its last kernelSleepAfter in nanosleep(2), and wakes
// tens of microseconds late without taking a core. A spinning one sleeps a
// wait longer than spin on a timer, which Go fires up to about 1 ms late,
// until spin/2 before its target; the rest is a busy-wait, which on a
// 2-core machine takes the core the server under test needs (issue 31).
//
// The busy-wait never yields. runtime.Gosched would put the goroutine on the
// global run queue, which the scheduler serves before it polls the network,
// so every network wake-up in the process would wait for sysmon's poll (up
// to 10 ms): the replies to an under-load run measured 0.1-1 ms instead of
// 20 us. A spinner that keeps its P leaves the network to the other Ps; with
// GOMAXPROCS 1 there is no other P, so the clock never busy-waits and waits
// start up to ~1 ms late instead.
type realClock struct {
	start time.Time
	spin  int64 // 0: never busy-wait
	timer *time.Timer
	// kernel makes every wait sleep, the last kernelSleepAfter of it in
	// the kernel (kernelSleep), and never busy-wait.
	kernel bool
	// raw makes the kernel's sleeps raw system calls (kernelSleep), for a
	// dispatcher that runs its only worker's requests itself in a process
	// with another P.
	raw bool
	// yields paces a raw clock's yields of its P (rawYield).
	yields yielder
	// yield makes the busy-wait yield to other goroutines, for a process
	// whose network waits do not go through the poller (PingPongConfig.Spin's
	// receiver reads its socket itself).
	yield bool

	// nowFn and sleepFn, set only by tests, replace the monotonic clock
	// and the timer.
	nowFn   func() int64
	sleepFn func(ctx context.Context, d time.Duration) bool
}

// newRealClock returns a clock counting from start that busy-waits the
// last spin of its waits when spin is positive and procs, the GOMAXPROCS it
// runs under, leaves another P to poll the network; otherwise it sleeps in
// the kernel.
func newRealClock(start time.Time, spin time.Duration, procs int) *realClock {
	c := &realClock{start: start, timer: time.NewTimer(time.Hour)}
	if spin <= 0 || procs < 2 {
		c.kernel = true
	} else {
		c.spin = int64(spin)
	}
	return c
}

func (c *realClock) base() time.Time { return c.start }

func (c *realClock) now() int64 {
	if c.nowFn != nil {
		return c.nowFn()
	}
	return int64(time.Since(c.start))
}

func (c *realClock) waitUntil(ctx context.Context, t int64) bool {
	if wait := t - c.now(); wait > c.spin {
		if !c.sleep(ctx, time.Duration(wait-c.spin/2)) {
			return false
		}
	}
	for i := 0; c.now() < t; i++ {
		if i&63 == 0 && ctx.Err() != nil {
			return false
		}
		if c.yield {
			runtime.Gosched()
		}
	}
	return ctx.Err() == nil
}

// sleep waits for d; false when ctx ended first.
func (c *realClock) sleep(ctx context.Context, d time.Duration) bool {
	if c.sleepFn != nil {
		return c.sleepFn(ctx, d)
	}
	if c.kernel {
		// The timer takes the long part of a wait, the kernel the last
		// kernelSleepAfter, where the timer's lateness would show.
		end := c.now() + int64(d)
		if d > kernelSleepAfter && !c.timerSleep(ctx, d-kernelSleepAfter) {
			return false
		}
		if c.raw {
			c.rawYield(d)
		}
		return kernelSleep(ctx, time.Duration(end-c.now()), c.raw)
	}
	return c.timerSleep(ctx, d)
}

// rawYieldWait is the shortest wait at whose start a raw clock yields
// (rawYield).
const rawYieldWait = 100 * time.Microsecond

// rawYield lets the clock's yielder yield at the start of a wait of d. A
// raw clock's goroutine makes only raw system calls, and the wake-up of
// the idle thread that the runtime's preemption brings came most often
// just after a send: the server woken by that send then found its CPU
// taken and waited about 100 us for the other, idle one, once every 20 ms
// (issue 42). A yield a moment after a reply, at least rawYieldWait before
// the next send, has that thread's spin over before the send.
func (c *realClock) rawYield(d time.Duration) {
	if d >= rawYieldWait {
		c.yields.at(c.now())
	}
}

// timerSleep waits for d on the Go timer; false when ctx ended first.
func (c *realClock) timerSleep(ctx context.Context, d time.Duration) bool {
	c.timer.Reset(d)
	select {
	case <-c.timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func (c *realClock) after(t int64) (<-chan struct{}, func()) {
	ch := make(chan struct{})
	tm := time.AfterFunc(time.Duration(t-c.now()), func() { close(ch) })
	return ch, func() { tm.Stop() }
}

// pacer produces intended start times (ns since the clock's base) at a
// fixed rate. They are fixed from the start: a late request never moves the
// ones after it, so the schedule neither drifts nor bursts to catch up.
type pacer struct {
	start    int64
	interval float64 // ns
	rng      *rand.Rand
	i        int64
	gaps     float64 // Poisson: sum of the gaps so far
}

func newPacer(start int64, rate float64, a Arrival, seed uint64) *pacer {
	p := &pacer{start: start, interval: float64(time.Second) / rate}
	if a == ArrivalPoisson {
		if seed == 0 {
			seed = 0x6e70_6b69_7401
		}
		p.rng = rand.New(rand.NewPCG(seed, seed>>1|1))
	}
	return p
}

// next returns the intended start of the next request.
func (p *pacer) next() int64 {
	var t float64
	if p.rng == nil {
		t = float64(p.i) * p.interval // multiplied, not summed: no drift
	} else {
		t = p.gaps
		p.gaps += p.rng.ExpFloat64() * p.interval
	}
	p.i++
	return p.start + int64(t)
}

func (c *ScheduleConfig) normalize() (ScheduleConfig, error) {
	var s ScheduleConfig
	if c != nil {
		s = *c
	}
	switch {
	case c == nil:
		return s, fmt.Errorf("%w: nil *ScheduleConfig (Rate and Do are required)", ErrInvalidConfig)
	case s.Do == nil:
		return s, fmt.Errorf("%w: Do is nil", ErrInvalidConfig)
	case !(s.Rate > 0) || math.IsInf(s.Rate, 1):
		return s, fmt.Errorf("%w: Rate %v is not a positive number", ErrInvalidConfig, s.Rate)
	case s.Arrival != ArrivalUniform && s.Arrival != ArrivalPoisson:
		return s, fmt.Errorf("%w: unknown Arrival %d", ErrInvalidConfig, int(s.Arrival))
	case s.Workers < 0:
		return s, fmt.Errorf("%w: Workers %d is negative", ErrInvalidConfig, s.Workers)
	case s.Duration < 0:
		return s, fmt.Errorf("%w: Duration %v is negative", ErrInvalidConfig, s.Duration)
	case s.LateAfter < 0:
		return s, fmt.Errorf("%w: LateAfter %v is negative", ErrInvalidConfig, s.LateAfter)
	}
	if s.Workers == 0 {
		s.Workers = defaultScheduleWorkers
	}
	if s.Duration == 0 && s.Count <= 0 {
		s.Duration = defaultDuration
	}
	if s.LateAfter == 0 {
		s.LateAfter = min(time.Duration(float64(time.Second)/s.Rate), maxLateAfter)
	}
	return s, nil
}

// Schedule runs cfg.Do open-loop: requests get intended start times at
// cfg.Rate (uniform or Poisson), and each starts on a free worker at its
// intended time, or as soon as one frees if every worker is busy (it then
// counts as late). The intended times are fixed from the start, so the
// offered rate never drifts and never bursts to catch up: at any moment the
// requests started never outnumber those intended so far.
//
// Schedule returns after the window and the requests in flight at its
// end, or within about 100 ms of ctx ending (provided Do returns when its
// context ends) with the result so far and ctx.Err(). The error wraps
// ErrInvalidConfig for a nil cfg, a nil Do or a Rate that is not positive.
// The result is never nil: after an error it is the zero ScheduleResult.
func Schedule(ctx context.Context, cfg *ScheduleConfig) (*ScheduleResult, error) {
	if ctx == nil {
		return &ScheduleResult{}, errNilContext
	}
	c, err := cfg.normalize()
	if err != nil {
		return &ScheduleResult{}, err
	}
	procs := runtime.GOMAXPROCS(0)
	clk := newRealClock(time.Now(), c.Spin, procs)
	defer clk.timer.Stop()
	// One worker runs on the dispatcher's goroutine (schedule), which then
	// waits only for its next send or its request: its sleeps keep the P
	// there is another of.
	clk.raw = c.Workers == 1 && procs >= 2
	return schedule(ctx, &c, clk)
}

// sched is the state of one Schedule call.
type sched struct {
	cfg     *ScheduleConfig
	clk     clock
	do      func(context.Context, Request) error
	start   int64
	end     int64 // window end (ns since base); MaxInt64 without Duration
	lateAft int64

	resp, serv, lat, ok, cl, wake *Recorder
	idle                          chan int
	work                          []chan Request
	// freeAt[id] is when worker id would have been free had the client
	// been on time (ns since base; see run); the worker writes it before
	// it puts id back on idle, which orders it before the dispatcher's
	// read.
	freeAt []int64
	// doneAt[id] is when worker id's last request actually ended (its Do
	// returned), written and read like freeAt.
	doneAt []int64

	started, late, failed, okIn, clientLate, reclassified atomic.Int64
}

func schedule(ctx context.Context, c *ScheduleConfig, clk clock) (*ScheduleResult, error) {
	s := &sched{cfg: c, clk: clk, do: c.Do, lateAft: int64(c.LateAfter), idle: make(chan int, c.Workers)}
	for _, r := range []**Recorder{&s.resp, &s.serv, &s.lat, &s.ok, &s.cl, &s.wake} {
		rec, err := NewRecorder(c.Recorder)
		if err != nil {
			return &ScheduleResult{}, err
		}
		*r = rec
	}
	s.start = clk.now()
	s.end = math.MaxInt64
	if c.Duration > 0 {
		s.end = s.start + int64(c.Duration)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	s.work = make([]chan Request, c.Workers)
	s.freeAt = make([]int64, c.Workers)
	s.doneAt = make([]int64, c.Workers)
	for id := range c.Workers {
		s.work[id] = make(chan Request, 1)
		s.idle <- id
		if c.Workers > 1 {
			wg.Go(func() { s.worker(wctx, id) })
		}
	}
	var inline *workerState
	if c.Workers == 1 {
		// One worker runs on the dispatcher's goroutine: handing each
		// request to another goroutine would add its wake-up to every
		// request, and the dispatcher has nothing else to do meanwhile.
		inline = s.newWorkerState()
	}
	p := newPacer(s.start, c.Rate, c.Arrival, c.Seed)
	due, stoppedAt := s.dispatch(ctx, wctx, p, inline)
	for _, ch := range s.work {
		close(ch)
	}
	wg.Wait()
	return s.result(due, stoppedAt), ctx.Err()
}

// dispatch starts requests until the window or Count ends, or ctx does. It
// returns the number of requests due in the window and when it stopped. A
// non-nil inline runs each request itself, on wctx.
func (s *sched) dispatch(ctx, wctx context.Context, p *pacer, inline *workerState) (due int64, stoppedAt int64) {
	// A dispatcher that runs the requests itself (one worker) is not
	// locked to its thread. The runtime preempts a goroutine that has run
	// 10 ms without rescheduling, and a busy-waiting one always has: a
	// locked goroutine's preemption hands its P to another thread and back
	// (two wake-ups, the second one on the other CPU, where the server
	// under test may run), an unlocked one's is a pass through its own
	// thread's scheduler. At 5000/s one request in 50 met that hand-off:
	// locked, a one-connection redis GET's p99 read a median 2.4x a plain
	// blocking client's over 5 alternating rounds, unlocked 0.8x
	// (docs/benchmarks.md, issue 23).
	//
	// A dispatcher that hands requests to workers is locked: that same
	// hand-off is what gives the workers it readied a P while it
	// busy-waits. Unlocked, a worker readied for its reply waited for the
	// dispatcher's next send (the reply wake-up's p99 was the dispatch
	// interval, 1 ms at 1000/s), and the SLO search fell from 33,000 to
	// 500 ops/s.
	if inline == nil {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	var windowOver <-chan struct{}
	if s.end != math.MaxInt64 {
		ch, stop := s.clk.after(s.end)
		defer stop()
		windowOver = ch
	}
	for seq := int64(0); ; seq++ {
		if s.cfg.Count > 0 && seq >= s.cfg.Count {
			return seq, s.clk.now()
		}
		intended := p.next()
		if intended >= s.end {
			return seq, s.end
		}
		if !s.clk.waitUntil(ctx, intended) {
			return seq, s.clk.now()
		}
		var id int
		select {
		case id = <-s.idle:
		default:
			select {
			case id = <-s.idle:
			case <-windowOver:
				return s.countDue(p, seq+1), s.end
			case <-ctx.Done():
				return seq, s.clk.now()
			}
		}
		now := s.clk.now()
		if now >= s.end {
			s.idle <- id
			return s.countDue(p, seq+1), s.end
		}
		if now-intended > s.lateAft {
			s.late.Add(1)
		}
		s.started.Add(1)
		s.lat.Record(time.Duration(now - intended))
		base := s.clk.base()
		req := Request{Seq: seq, Worker: id, Intended: base.Add(time.Duration(intended)), Start: base.Add(time.Duration(now)),
			queued: max(min(s.freeAt[id], now)-intended, 0)}
		// The wait for a worker that is not the server's: behind a
		// request the client sent late itself.
		if max(min(s.doneAt[id], now)-intended, 0)-req.queued > s.lateAft {
			s.reclassified.Add(1)
		}
		if inline != nil {
			s.run(wctx, inline, req)
			continue
		}
		s.work[id] <- req
	}
}

// countDue counts the rest of the intended start times in the window, the
// first n being known to be.
func (s *sched) countDue(p *pacer, n int64) int64 {
	for (s.cfg.Count <= 0 || n < s.cfg.Count) && p.next() < s.end {
		n++
	}
	return n
}

// workerState is one worker's recorders and the times its Do reports.
type workerState struct {
	resp, serv, ok, cl, wake *Worker
	sent, arrived, left      time.Time
}

func (s *sched) newWorkerState() *workerState {
	return &workerState{resp: s.resp.Worker(), serv: s.serv.Worker(), ok: s.ok.Worker(), cl: s.cl.Worker(), wake: s.wake.Worker()}
}

// worker runs the requests given to worker id.
func (s *sched) worker(ctx context.Context, id int) {
	w := s.newWorkerState()
	for req := range s.work[id] {
		s.run(ctx, w, req)
	}
}

// run runs req on worker state w, records it and frees its worker.
func (s *sched) run(ctx context.Context, w *workerState, req Request) {
	w.sent, w.arrived, w.left = time.Time{}, time.Time{}, time.Time{}
	req.Sent, req.Arrived, req.Left = &w.sent, &w.arrived, &w.left
	err := s.do(ctx, req)
	done := s.clk.now()
	base := s.clk.base()
	intended := int64(req.Intended.Sub(base))
	sent := int64(req.Start.Sub(base))
	if !w.sent.IsZero() {
		sent = min(max(int64(w.sent.Sub(base)), sent), done)
	}
	// The server had the request from its send to its reply's arrival (or
	// Do's return): a wait past the arrival is the client's reading.
	left := sent
	if !w.left.IsZero() {
		left = min(max(int64(w.left.Sub(base)), sent), done)
	}
	free := done
	if !w.arrived.IsZero() {
		free = min(max(int64(w.arrived.Sub(base)), left), done)
	}
	// The worker is free for the next request when it would have been
	// had the client sent every request on time: from this one's charged
	// start, the server's time on it. A client that stalls therefore
	// never charges the server for the backlog it sends afterwards, while
	// a server that stalls is charged for all it kept waiting.
	vfree := intended + req.queued + (free - left)
	defer func() {
		s.freeAt[req.Worker], s.doneAt[req.Worker] = vfree, done
		s.idle <- req.Worker
	}()
	if err != nil && ctx.Err() != nil {
		return // cut short by the caller
	}
	// The client's own lateness: the send's delay past the later of the
	// intended start and the moment a worker was free for it.
	own := max(sent-intended-req.queued, 0)
	if own > s.lateAft {
		s.clientLate.Add(1)
	}
	w.cl.Record(time.Duration(own))
	if !w.arrived.IsZero() {
		w.wake.Record(time.Duration(max(done-int64(w.arrived.Sub(base)), 0)))
	}
	response := time.Duration(done - intended - own)
	w.resp.Record(response)
	w.serv.Record(time.Duration(done) - req.Start.Sub(base))
	if err != nil {
		s.failed.Add(1)
		return
	}
	w.ok.Record(response)
	if done <= s.end {
		s.okIn.Add(1)
	}
}

func (s *sched) result(due, stoppedAt int64) *ScheduleResult {
	r := &ScheduleResult{
		TargetRate: s.cfg.Rate, Arrival: s.cfg.Arrival.String(), Workers: s.cfg.Workers,
		Window: time.Duration(min(stoppedAt, s.end) - s.start), Elapsed: time.Duration(s.clk.now() - s.start),
		Due: due, Started: s.started.Load(), Late: s.late.Load(), Failed: s.failed.Load(),
		SucceededInWindow: s.okIn.Load(), ClientLate: s.clientLate.Load(), Reclassified: s.reclassified.Load(),
	}
	r.Unstarted = max(r.Due-r.Started, 0)
	if r.Window > 0 {
		r.AchievedRate = float64(r.Started) / r.Window.Seconds()
	}
	for _, x := range []struct {
		rec *Recorder
		h   **hdrhistogram.Histogram
		sum *Summary
	}{
		{s.resp, &r.ResponseHistogram, &r.Response}, {s.serv, &r.ServiceHistogram, &r.Service},
		{s.lat, new(*hdrhistogram.Histogram), &r.StartLateness}, {s.ok, &r.SuccessResponseHistogram, &r.SuccessResponse},
		{s.cl, new(*hdrhistogram.Histogram), &r.ClientLateness}, {s.wake, new(*hdrhistogram.Histogram), &r.ReceiveWake},
	} {
		if x.rec.Count() > 0 {
			*x.h = x.rec.Snapshot()
			*x.sum = SummarizeHistogram(*x.h, s.cfg.CILevel)
		}
	}
	return r
}
