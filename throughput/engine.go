package throughput

import (
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/netperfkit/netperfkit/internal/iperfwire"
)

// tcpInfo is the part of TCP_INFO the reports use.
type tcpInfo struct {
	OK           bool
	TotalRetrans int64
	SndCwndBytes int64
	RTTUs        int64
	RTTVarUs     int64
	PMTU         int64
	SndWnd       int64 // tcpi_snd_wnd (linux 5.4+; 0 before)
	ReordSeen    int64 // tcpi_reord_seen (linux 4.19+; 0 before)
	lim          limitSample
}

// public is the reports' view of the TCP_INFO, nil when unknown.
func (ti tcpInfo) public() *TCPInfo {
	if !ti.OK {
		return nil
	}
	return &TCPInfo{SndCwndBytes: ti.SndCwndBytes, RTT: time.Duration(ti.RTTUs) * time.Microsecond,
		RTTVar: time.Duration(ti.RTTVarUs) * time.Microsecond, PMTU: ti.PMTU, SndWndBytes: ti.SndWnd, ReorderSeen: ti.ReordSeen}
}

// sockOpts are the per-socket options of a test.
type sockOpts struct {
	window     int
	mss        int
	congestion string
	pacing     float64 // SO_MAX_PACING_RATE in bits/s, 0: leave it
}

// tcpSocket is c as a socket when c is a TCP stream: a *net.TCPConn, or a
// socket a stream thread took over (Config.StreamThreads).
func tcpSocket(c net.Conn) (syscall.Conn, bool) {
	if tc, ok := c.(*net.TCPConn); ok {
		return tc, true
	}
	if threadOf(c) != nil {
		return c.(syscall.Conn), true
	}
	return nil, false
}

// flowStream is one data stream of a running test, seen from this side.
type flowStream struct {
	id   int
	send bool // this side sends on it
	udp  bool
	conn net.Conn
	fast *udpFast    // linux GSO/GRO helper, nil when not in use
	peer net.Addr    // the remote address where conn has none: a server's UDP stream, connected by connect(2)
	data *streamData // its source (Config.SendFrom) or sink (ReceiveTo), nil when none
	// sinking is set while a write to the stream's sink is in progress:
	// the end's drain waits for it (a slow sink is not an idle stream).
	sinking atomic.Bool

	bytes   atomic.Int64 // payload bytes sent or received while counting
	blocks  atomic.Int64 // writes or reads
	packets atomic.Int64 // UDP datagrams sent
	// UDP datagrams this host refused (ENOBUFS): dropped (Config.UDPKeepRate)
	// or sent again once its queue took them; counted apart from packets.
	localDrops, localRetries atomic.Int64

	mu     sync.Mutex
	rstats udpRecvStats // UDP receive accounting, under mu

	// Reporter-only state.
	last       streamSnap
	omitSnap   streamSnap
	retransAt  int64 // Total_retrans when counting (re)started
	lastRetran int64
	final      streamSnap
	finalInfo  tcpInfo
	limAt      limitSample // the sender's limit counters when counting (re)started
	limLast    limitSample // ... at the last interval's end
	dropsAt    streamSnap  // a UDP receiver's socket drops when the test began (sockDrops)
	dropsEnd   streamSnap  // ... once the streams stopped, before they closed
	held       *heldSocket // the ledger's duplicate of a UDP socket, nil when none
	// late counts UDP datagrams read after counting stopped: the peer sent
	// them in the test, iperf3 counts them lost, the loss ledger apart.
	late atomic.Int64
}

// addrs are the stream's local and remote addresses, "" when unknown.
func (s *flowStream) addrs() (local, remote string) {
	la, ra := s.conn.LocalAddr(), s.conn.RemoteAddr()
	if ra == nil {
		ra = s.peer
	}
	if la == nil || ra == nil {
		return "", ""
	}
	return la.String(), ra.String()
}

// streamSnap is a copy of a stream's counters at one instant.
type streamSnap struct {
	bytes, blocks, packets int64
	rx                     udpRecvStats
	localDrops, localRetry int64
	sockDrops              int64 // a UDP receiver's SO_MEMINFO drops (socketDrops), 0 when unknown
	sockDropsOK            bool
}

func (s *flowStream) snap() streamSnap {
	sn := streamSnap{bytes: s.bytes.Load(), blocks: s.blocks.Load(), packets: s.packets.Load(),
		localDrops: s.localDrops.Load(), localRetry: s.localRetries.Load()}
	if s.udp && !s.send {
		s.mu.Lock()
		sn.rx = s.rstats
		s.mu.Unlock()
		sn.sockDrops, sn.sockDropsOK = s.held.drops()
	}
	return sn
}

// engine moves data on the streams of one test until stopped. It reads the
// test's settings from cfg and never changes them.
type engine struct {
	cfg     *Config
	streams []*flowStream
	limits  bool // the test ends at cfg.Bytes or cfg.Blocks (the client's side)
	client  bool // the client's side: the end of its sources ends the test
	cpu     int  // the CPU each stream's thread is pinned to (a server's ServerAffinity), -1 for none
	base    time.Time

	total    atomic.Int64
	totalBlk atomic.Int64
	resBytes atomic.Int64 // bytes senders have claimed under cfg.Bytes
	resBlks  atomic.Int64 // blocks senders have claimed under cfg.Blocks
	sources  atomic.Int32 // sending streams whose source has not ended (Config.SendFrom)
	stopping atomic.Bool
	sendStop atomic.Bool
	lowatOff atomic.Bool // receivers' SO_RCVLOWAT is back to 1 (endLowat)
	counting atomic.Bool
	// sendersLeft is how many sending streams have not returned yet.
	sendersLeft atomic.Int64
	wg          sync.WaitGroup
	sendWG      sync.WaitGroup

	quitOnce sync.Once
	quit     chan struct{} // closed when senders must stop: wakes paced senders
	doneOnce sync.Once
	done     chan struct{} // closed when a limit is reached or a stream fails
	errMu    sync.Mutex
	err      error
	dataErr  error // a source's or sink's, under errMu (dataFailed)
}

// newEngine returns the engine for cfg; limits is true on the side that ends
// the test at a byte or block count (the client).
func newEngine(cfg *Config, limits bool) *engine {
	return &engine{cfg: cfg, limits: limits && (cfg.Bytes > 0 || cfg.Blocks > 0), cpu: -1,
		done: make(chan struct{}), quit: make(chan struct{}), base: time.Now()}
}

func (e *engine) finish(err error) {
	if err != nil && !e.stopping.Load() && !e.sendStop.Load() {
		e.errMu.Lock()
		if e.err == nil {
			e.err = err
		}
		e.errMu.Unlock()
	}
	e.doneOnce.Do(func() { close(e.done) })
}

func (e *engine) failure() error {
	e.errMu.Lock()
	defer e.errMu.Unlock()
	return e.err
}

// addBlocks accounts n bytes in blocks writes or datagrams.
func (e *engine) addBlocks(s *flowStream, n int, blocks int64) {
	if !e.counting.Load() {
		return
	}
	s.bytes.Add(int64(n))
	s.blocks.Add(blocks)
	if !e.limits {
		return // no shared counters to contend on
	}
	t := e.total.Add(int64(n))
	b := e.totalBlk.Add(blocks)
	if (e.cfg.Bytes > 0 && t >= e.cfg.Bytes) || (e.cfg.Blocks > 0 && b >= e.cfg.Blocks) {
		e.finish(nil)
	}
}

// add accounts n bytes in one block.
func (e *engine) add(s *flowStream, n int) { e.addBlocks(s, n, 1) }

// reserve claims one block of n bytes for a sender under the bytes and
// blocks limits, so senders stop exactly at -n or -k as iperf3's do. It
// returns false once the limit is used up. The test ends when the last
// reserved block is written (addBlocks), not here: other streams may still
// be writing theirs, blocked on a full socket, and ending now would cut
// them short. When a reserved block is never counted (a datagram the host
// refused and the sender dropped), the last sender to return ends it
// (senderReturned).
func (e *engine) reserve(n int) bool {
	if !e.limits {
		return true
	}
	if b := e.cfg.Bytes; b > 0 && e.resBytes.Add(int64(n))-int64(n) >= b {
		return false
	}
	if k := e.cfg.Blocks; k > 0 && e.resBlks.Add(1) > k {
		return false
	}
	return true
}

// senderReturned ends a test that stops at a byte or block count when its
// last sending stream has returned: every reserved block has been written
// or given up by then.
func (e *engine) senderReturned() {
	if e.sendersLeft.Add(-1) == 0 && e.limits {
		e.finish(nil)
	}
}

// start launches one goroutine per stream. Counting starts at once.
func (e *engine) start() {
	e.counting.Store(true)
	e.countSources()
	if e.cfg.RecvTimeout > 0 && slices.ContainsFunc(e.streams, func(s *flowStream) bool { return !s.send }) {
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			e.watchRecv(e.cfg.RecvTimeout)
		}()
	}
	e.startThreads()
	for _, s := range e.streams {
		if s.send {
			e.sendersLeft.Add(1)
		}
	}
	for _, s := range e.streams {
		e.wg.Add(1)
		if s.send {
			e.sendWG.Add(1)
		}
		go func(s *flowStream) {
			defer e.wg.Done()
			if s.send {
				defer e.sendWG.Done()
			}
			e.streamEnded(s, e.run(s))
			if s.send {
				e.senderReturned()
			}
		}(s)
	}
}

// run moves the data of stream s until the test stops, on an OS thread of
// its own pinned to e.cpu when that is set.
func (e *engine) run(s *flowStream) error {
	if e.cpu >= 0 {
		unpin, err := pinThread(e.cpu)
		if err != nil {
			if threadOf(s.conn) != nil {
				returnP() // the P lent for the thread, which will not run
			}
			return fmt.Errorf("%w: CPU %d: %w", ErrAffinity, e.cpu, err)
		}
		defer unpin()
	}
	switch {
	case s.send && s.udp:
		return e.sendUDP(s)
	case s.send:
		return e.sendTCP(s)
	case s.udp:
		return e.recvUDP(s)
	case threadOf(s.conn) != nil:
		return e.recvThread(s)
	}
	return e.recvTCP(s)
}

// streamEnded ends the test when a stream's goroutine returned an error.
func (e *engine) streamEnded(s *flowStream, err error) {
	if err == nil {
		return
	}
	err = fmt.Errorf("throughput: stream %d: %w", s.id, err)
	var de *dataError
	if errors.As(err, &de) {
		e.dataFailed(err)
		return
	}
	e.finish(err)
}

// watchRecv ends the test with ErrRecvIdle when the receiving streams take
// in nothing for timeout, as iperf3 --rcv-timeout does; it returns when
// the senders stop (the test's end).
func (e *engine) watchRecv(timeout time.Duration) {
	tick := min(max(timeout/8, 10*time.Millisecond), time.Second)
	tk := time.NewTicker(tick)
	defer tk.Stop()
	received := func() (n int64) {
		for _, s := range e.streams {
			if !s.send {
				n += s.bytes.Load()
			}
		}
		return n
	}
	last, lastT := received(), time.Now()
	for {
		select {
		case <-e.quit:
			return
		case now := <-tk.C:
			if n := received(); n != last {
				last, lastT = n, now
				continue
			}
			if now.Sub(lastT) >= timeout {
				e.finish(&reasonError{reason: reasonTimeout,
					err: fmt.Errorf("%w: nothing received for %v", ErrRecvIdle, now.Sub(lastT).Round(time.Millisecond))})
				return
			}
		}
	}
}

// freeze stops counting; bytes that arrive later are not part of the test,
// as in iperf3, which counts only while TEST_RUNNING.
func (e *engine) freeze() {
	e.counting.Store(false)
	for _, s := range e.streams {
		s.final = s.snap()
		if !s.udp && s.send {
			s.finalInfo, _ = readTCPInfo(s.conn)
		}
	}
}

// stopSenders ends the sending goroutines and waits for them, so that the
// counters then hold exactly what was written.
func (e *engine) stopSenders() {
	e.sendStop.Store(true)
	e.quitOnce.Do(func() { close(e.quit) })
	past := time.Now().Add(-time.Second)
	for _, s := range e.streams {
		if s.send {
			_ = s.conn.SetWriteDeadline(past)
		}
	}
	e.unblockData(past, false)
	e.sendWG.Wait()
}

// stop ends every stream goroutine within a bounded time and waits for them.
func (e *engine) stop() {
	e.stopping.Store(true)
	e.sendStop.Store(true)
	e.quitOnce.Do(func() { close(e.quit) })
	past := time.Now().Add(-time.Second)
	for _, s := range e.streams {
		_ = s.conn.SetDeadline(past)
		if rt := threadOf(s.conn); rt != nil {
			rt.wake()
		}
	}
	e.unblockData(past, true)
	e.wg.Wait()
	e.closeData()
	e.doneOnce.Do(func() { close(e.done) })
}

func (e *engine) closeAll() {
	for _, s := range e.streams {
		_ = s.conn.Close()
	}
}

// deadline refreshes a connection deadline at most every quarter timeout,
// so a read or write never blocks longer than ioTimeout without paying for
// a timer update per call.
//
// stop is the engine flag that ends the loop (stopping for readers,
// sendStop for writers). The engine sets it and then puts the deadline in
// the past; a refresh that lands after that would push the deadline out
// again and leave the loop blocked for a whole timeout, so each refresh
// reads the flag after it sets the deadline and, when it is set, puts the
// deadline back in the past.
type deadline struct {
	last time.Time
	stop *atomic.Bool
}

// refreshAt moves the deadline to now+timeout, at most every quarter
// timeout; now is the caller's clock reading.
func (d *deadline) refreshAt(c net.Conn, now time.Time, timeout time.Duration, write bool) {
	if now.Sub(d.last) < timeout/4 {
		return
	}
	d.last = now
	set := c.SetReadDeadline
	if write {
		set = c.SetWriteDeadline
	}
	_ = set(now.Add(timeout))
	if d.stop.Load() {
		_ = set(now.Add(-time.Second))
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// blockWriter is sendTCP's write of the package's pattern, buf, on a
// stream without a source: through the poller, from a file that holds buf
// with sendfile (ZeroCopy), or on the stream's thread. The caller defers done.
func (e *engine) blockWriter(s *flowStream, buf []byte) (write func() (int, error), done func()) {
	fillPayload(buf)
	switch {
	case threadOf(s.conn) != nil:
		return e.threadWriter(s, buf)
	case e.cfg.ZeroCopy:
		if fs, err := newFileSender(s.conn, buf); err == nil {
			return fs.write, fs.close
		}
	}
	return func() (int, error) { return s.conn.Write(buf) }, func() {}
}

func (e *engine) sendTCP(s *flowStream) error {
	buf := make([]byte, e.cfg.BlockLen)
	writer := e.blockWriter
	if s.data != nil {
		writer = e.sourceWriter
	}
	write, done := writer(s, buf)
	defer done()
	p := newPacer(rate(e.cfg), time.Now(), coarseSleep{quit: e.quit})
	p.plain = true // TCP keeps its average rate; the kernel smooths its bursts
	dl := deadline{stop: &e.sendStop}
	per, left := 1, 0 // writes per pacing slot (Config.Burst), and left in this one
	if e.cfg.Burst > 0 {
		per = e.cfg.Burst
	}
	var now time.Time
	for !e.sendStop.Load() && e.reserve(len(buf)) {
		if left == 0 {
			now = p.wait(per * len(buf))
			left = per
			if e.sendStop.Load() {
				// The test ended while the pacer slept (the end's quit
				// cuts the sleep short): a write now would go ahead of
				// the schedule, one block more than the rate allows.
				return nil
			}
		} else {
			now = time.Now() // a burst's writes may block: keep the deadline fresh
		}
		left--
		dl.refreshAt(s.conn, now, e.cfg.IOTimeout, true)
		n, err := write()
		if n > 0 {
			e.add(s, n)
		}
		if err != nil {
			if err == errSourceEnd {
				e.sourceEnded()
				return nil
			}
			if e.sendStop.Load() {
				return nil
			}
			return err
		}
	}
	return nil
}

func (e *engine) recvTCP(s *flowStream) error {
	buf := make([]byte, e.cfg.ReadLen)
	read := func() (int, error) { return s.conn.Read(buf) }
	if e.cfg.SkipRxCopy {
		if tr, err := newTruncReader(s.conn, buf); err == nil {
			read = tr.read
		}
	}
	read = sinkReader(s, buf, read)
	dl := deadline{stop: &e.stopping}
	lw := newLowat(s.conn, e.cfg, &e.lowatOff)
	var got int64 // bytes read, counted or not, for the wake-up threshold
	for i := 0; ; i++ {
		// The clock is read every 64th read only (every read while the
		// wake-up threshold adapts: a few ns against a 128 KiB copy):
		// the deadline is a quarter timeout ahead, and a read that times
		// out early is retried below.
		if i%64 == 0 || lw.enabled {
			now := time.Now()
			dl.refreshAt(s.conn, now, e.cfg.IOTimeout, false)
			lw.adapt(now, got)
		}
		n, err := read()
		if n > 0 {
			e.add(s, n)
			got += int64(n)
		}
		if err != nil {
			if _, ok := err.(*dataError); ok {
				return err
			}
			if e.stopping.Load() {
				return nil
			}
			if isTimeout(err) {
				dl.last, i = time.Time{}, -1 // a slow sender is not an error; stop() ends us
				continue
			}
			// The peer closing its sending stream ends this one.
			return nil
		}
	}
}

// setupUDP prepares a UDP data socket: its buffers, the kernel's pacing cap
// for a sender, the offload this side uses, and for a receiver without GRO
// a datagram-by-datagram read with each one's arrival time, the kernel's
// unless c.JitterRead is set (nil: none of these).
func setupUDP(uc *net.UDPConn, c *Config, send bool) *udpFast {
	gso, gro := send && useGSO(c), !send && useGRO(c)
	tuneUDP(uc, c.Window, send, gro)
	if r := pacingRate(c); send && r > 0 {
		_ = setPacingRate(uc, r)
	}
	if send {
		reportLocalDrops(uc)
	}
	var f *udpFast
	if gso || gro {
		f, _ = newUDPFast(uc, gso, gro, c.BlockLen)
	}
	if !send && (f == nil || !f.gro) && !c.SkipRxCopy && udpFastAvailable &&
		(c.JitterRead || enableRxStamps(uc)) {
		if f == nil {
			f = &udpFast{}
		}
		f.stamps = true
	}
	return f
}

// sendUDP sends datagrams in writes of up to gsoBatch datagrams (one
// GSO write each, when the socket has UDP_SEGMENT), each datagram stamped
// with the time of its write.
func (e *engine) sendUDP(s *flowStream) error {
	k := 1
	if s.fast != nil && s.fast.gso {
		k = e.gsoBatch()
	}
	// step is how many datagrams go per pacing slot: one write's worth, or
	// a whole burst (Config.Burst), written k at a time without pause.
	step, burst := k, e.cfg.Burst > 0 && rate(e.cfg) > 0
	if burst {
		step = e.cfg.Burst
	}
	l := e.cfg.BlockLen
	buf := make([]byte, k*l)
	fillPayload(buf)
	var sl sleeper = coarseSleep{quit: e.quit}
	if rate(e.cfg) > 0 {
		sl = newSleeper(e.quit)
	}
	defer sl.close()
	p := newPacer(rate(e.cfg), time.Now(), sl)
	dl := deadline{stop: &e.sendStop}
	w := udpWriter{e: e, s: s, send: s.conn.Write, buf: buf, l: l, k: k, sl: sl}
	if send, closeFn, ok := udpSender(s.conn, &e.sendStop); ok {
		w.send = send
		defer closeFn()
	}
	for !e.sendStop.Load() {
		if !burst {
			step = w.k // one datagram per write once the device cannot segment
		}
		n := 0
		for n < step && e.reserve(l) {
			n++
		}
		if n == 0 {
			return nil
		}
		now := p.wait(n * l)
		for off := 0; off < n && !e.sendStop.Load(); {
			m := min(w.k, n-off)
			if burst && off > 0 {
				now = time.Now()
			}
			// Each datagram carries the time of the write that sends it:
			// a batch leaves at once (GSO segments it on the wire, back
			// to back), and stamping its datagrams with later slots on
			// the rate's schedule would show the receiver a transit time
			// falling by a slot per datagram -- jitter of our batching,
			// not of the path (0.016 ms at 1 Gbit/s in 4-datagram batches).
			w.stamp(m, now)
			dl.refreshAt(s.conn, now, e.cfg.IOTimeout, true)
			sent, err := w.write(m)
			if err != nil {
				return err
			}
			off += sent
			if sent == 0 && !burst {
				break // a transient error: the next slot carries on
			}
		}
	}
	return nil
}

// udpWriter writes a UDP sender's datagrams, k (a GSO batch) per write.
type udpWriter struct {
	e     *engine
	s     *flowStream
	send  func([]byte) (int, error) // udpSender's, or s.conn.Write
	buf   []byte
	l, k  int
	count uint64 // datagrams sent so far: the next header's counter
	sl    sleeper
	// backoff is how long the sender waits before it offers datagrams
	// its host refused again; it doubles while the host keeps refusing.
	backoff time.Duration
}

// stamp writes the headers of the first m datagrams: send time at, and
// each its counter.
func (w *udpWriter) stamp(m int, at time.Time) {
	c64 := counters64(w.e.cfg)
	hl := iperfwire.UDPHeaderLen(c64)
	sec, usec := w.e.stampAt(at)
	for i := range m {
		h := iperfwire.UDPHeader{Sec: sec, Usec: usec, Count: w.count + uint64(i) + 1}
		iperfwire.PutUDPHeader(w.buf[i*w.l:i*w.l+hl], h, c64)
	}
}

// write sends the first m stamped datagrams in one write and returns how
// many went: 0 after an error the sender rides out (a full buffer, a
// device that cannot segment, which drops to one datagram per write), or
// the error that ends the stream (nil once the senders are told to stop).
// Datagrams the host refuses (localRefusal) are offered again after a
// wait, or with Config.UDPKeepRate dropped: then write returns m, but
// neither the counter in the headers nor the sent counts move, so the
// receiver never sees them as lost on the path.
func (w *udpWriter) write(m int) (int, error) {
	n, err := w.send(w.buf[:m*w.l])
	if err != nil && localRefusal(err) && w.e.cfg.UDPKeepRate {
		// Dropped by this host's queue, even as the senders stop: the
		// qdisc counted it, and so do we.
		w.s.localDrops.Add(int64(m))
		return m, nil
	}
	for err != nil && localRefusal(err) && !w.e.sendStop.Load() {
		w.s.localRetries.Add(int64(m))
		w.waitQueue()
		// The datagrams leave now, not when they were first offered: the
		// wait is this host's, and must not read as jitter on the path.
		w.stamp(m, time.Now())
		n, err = w.send(w.buf[:m*w.l])
	}
	w.backoff = 0
	if err != nil {
		switch {
		case w.e.sendStop.Load():
			return 0, nil
		case w.k > 1 && (errors.Is(err, syscall.EIO) || errors.Is(err, syscall.EINVAL)):
			w.k = 1 // the device cannot segment: one datagram per write
			w.s.fast.gso = false
		case transientUDP(err):
		default:
			return 0, err
		}
		return 0, nil
	}
	w.count += uint64(m)
	w.s.packets.Add(int64(m))
	w.e.addBlocks(w.s, n, int64(m))
	return m, nil
}

// Bounds of udpWriter.backoff: a 64 KiB GSO write drains from a 1 Gbit/s
// qdisc in 0.5 ms, so the first retry comes well within one write's time
// and a host that keeps refusing is asked at least every millisecond.
const (
	minQueueWait = 20 * time.Microsecond
	maxQueueWait = time.Millisecond
)

// waitQueue waits for the host's queue to drain before a refused write is
// offered again. The kernel wakes no one when a qdisc has room again (a
// blocking socket, as iperf3's, waits on its own send buffer instead), so
// the sender polls, backing off while the queue stays full.
func (w *udpWriter) waitQueue() {
	w.backoff = min(max(2*w.backoff, minQueueWait), maxQueueWait)
	w.sl.sleep(w.backoff)
}

// stampAt is the sender timestamp for the clock reading now (from
// time.Now): wall clock at engine start plus monotonic time since, so it
// never jumps backwards during a test.
func (e *engine) stampAt(now time.Time) (sec, usec uint32) {
	t := e.base.Add(now.Sub(e.base))
	us := t.UnixMicro()
	return uint32(us / 1e6), uint32(us % 1e6)
}

// arrivalAt is the receive timestamp, in seconds, for the clock reading now
// (from time.Now), on the same clock as stampAt.
func (e *engine) arrivalAt(now time.Time) float64 {
	t := e.base.Add(now.Sub(e.base))
	return float64(t.UnixMicro()) / 1e6
}

// localRefusal reports whether err says this host refused a datagram
// rather than sent it: ENOBUFS, from a full qdisc or device queue (the
// socket has IP_RECVERR, without which linux reports such a drop as
// success), or a send buffer that cannot take it.
func localRefusal(err error) bool {
	return errors.Is(err, syscall.ENOBUFS)
}

// transientUDP reports errors a UDP sender should ride out: a full socket
// buffer, or an ICMP error queued by an earlier datagram.
func transientUDP(err error) bool {
	return errors.Is(err, syscall.ENOBUFS) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EAGAIN) ||
		errors.Is(err, os.ErrDeadlineExceeded)
}

func (e *engine) recvUDP(s *flowStream) error {
	switch {
	case s.fast != nil && s.fast.gro:
		return e.recvUDPFast(s)
	case s.fast != nil && s.fast.stamps:
		return e.recvUDPStamped(s)
	}
	buf := make([]byte, 65536)
	read := func() (int, error) { return s.conn.Read(buf) }
	if e.cfg.SkipRxCopy {
		hdr := buf[:iperfwire.UDPHeaderLen(counters64(e.cfg))]
		if tr, err := newTruncReader(s.conn, hdr); err == nil {
			read = tr.read
		}
	}
	dl := deadline{stop: &e.stopping}
	now := time.Now()
	for {
		// now is when the previous read returned: one clock reading per
		// datagram serves its arrival time and the next deadline.
		dl.refreshAt(s.conn, now, e.cfg.IOTimeout, false)
		n, err := read()
		now = time.Now()
		if err != nil {
			if retry, err := e.udpReadFailed(err, &dl); !retry {
				return err
			}
			continue
		}
		e.udpDatagram(s, buf[:n], now)
	}
}

// udpReadFailed sorts a UDP receiver's read error: retry (a timeout, or an
// error the receiver rides out, with the deadline refreshed on the next
// read), or end the stream with the error returned (nil once the engine
// is stopping).
func (e *engine) udpReadFailed(err error, dl *deadline) (retry bool, _ error) {
	switch {
	case e.stopping.Load():
		return false, nil
	case isTimeout(err) || transientUDP(err):
		dl.last = time.Time{}
		return true, nil
	}
	return false, err
}

// udpDatagram accounts one received datagram that arrived at now.
func (e *engine) udpDatagram(s *flowStream, b []byte, now time.Time) {
	if !e.counting.Load() {
		s.late.Add(1)
		return
	}
	h, err := iperfwire.ParseUDPHeader(b, counters64(e.cfg))
	if err != nil {
		return
	}
	sent := float64(h.Sec) + float64(h.Usec)/1e6
	arr := e.arrivalAt(now)
	s.mu.Lock()
	s.rstats.add(h.Count, sent, arr, len(b))
	s.mu.Unlock()
	e.add(s, len(b))
}

// fillPayload fills a send buffer with a repeating pattern (iperf3 sends
// random bytes by default; a pattern costs nothing and compresses no less on
// links that do not compress).
func fillPayload(b []byte) {
	const pat = "0123456789abcdefghijklmnopqrstuvwxyz"
	for i := range b {
		b[i] = pat[i%len(pat)]
	}
}

// maxGSOSegments is the kernel's limit on segments per GSO send (UDP_MAX_SEGMENTS).
const maxGSOSegments = 64

// maxGSOBatch is the most datagrams of n bytes one GSO send may carry.
func maxGSOBatch(n int) int { return max(min(65000/n, maxGSOSegments), 1) }

// gsoBatch is how many datagrams one GSO write carries: at most 64
// segments and 64 KiB, and with a target rate no more than maxBatchTime of
// it (at least one datagram), so that pacing stays smooth.
func (e *engine) gsoBatch() int {
	k := maxGSOBatch(e.cfg.BlockLen)
	if rate := rate(e.cfg); rate > 0 {
		byRate := int(rate * maxBatchTime.Seconds() / (8 * float64(e.cfg.BlockLen)))
		k = min(k, byRate)
	}
	return max(k, 1)
}
