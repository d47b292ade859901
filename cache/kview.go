package cache

import (
	"errors"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/netperfkit/netperfkit/internal/kstamp"
	"github.com/netperfkit/netperfkit/latency"
)

// KernelView is the kernel-to-kernel view of a run's requests: from each
// request's software transmit stamp to its reply's receive stamp, both
// taken by the client host's kernel (SO_TIMESTAMPING, SO_TIMESTAMPNS). It
// is what the path and the server did, with none of the client's
// scheduling in it: beside the application's view (RunResult.Latency,
// which leads, being what an application gets from a client library) it
// shows the path's and the server's share. Only successful requests are
// in it.
//
// It is taken on a sample, so that it costs the application view nothing
// measurable: only a sampled request asks the kernel for its transmit
// stamp (a control message on its sendmsg(2)) and reads it back from the
// error queue; the others are sent and read as without the view. The run's
// expected requests (Rate × Duration, or MaxOps when fewer) are cut into
// blocks of k = max(1, ⌊expected / 1,000⌋) consecutive requests and one
// request at a pseudo-random place in each block is stamped: at least
// 1,000 stamped requests in a run that completes (all of them in a run of
// fewer), about 1 in k, spread evenly over the run without keeping step
// with anything periodic. Response.Observations + StampsLost is how many
// were stamped and succeeded.
type KernelView struct {
	// Response summarises the kernel-to-kernel response times.
	Response latency.Summary `json:"response"`
	// Histogram holds them in nanoseconds; nil when empty.
	Histogram *hdrhistogram.Histogram `json:"-"`
	// StampsLost counts the sampled successful requests without the
	// view: the kernel dropped a transmit stamp (its error queue was full)
	// or gave the reply no receive stamp (as it does for the first replies
	// on a host where no socket had asked for receive stamps yet: the
	// kernel turns them on for all sockets in deferred work).
	StampsLost int64 `json:"stamps_lost"`
}

// Why a run has no kernel view (RunResult.NoKernelStamps).
const (
	noStampsClosedLoop = "closed-loop run: the kernel view is taken on open-loop runs (WorkloadConfig.Rate), whose replies are read in the kernel"
	noStampsConnect    = "connect-per-op run: transmit stamps are set up only on pooled connections, so that a connection's set-up costs nothing more"
	noStampsGlide      = "engine glide: its sockets live in its Rust core"
	noStampsNone       = "the kernel gave no stamp for any successful request"
	noStampsNotAsked   = "not asked for (WorkloadConfig.NoKernelView)"
)

// kernelReason is why a run of w has no kernel view, or "" when it may
// have one (an open-loop, pooled run on the resp engine).
func kernelReason(w *WorkloadConfig) string {
	switch name := w.engineName(); {
	case name == "glide":
		return noStampsGlide
	case name != respName:
		return "engine " + name + ": its sockets are out of reach"
	case w.Rate <= 0:
		return noStampsClosedLoop
	case w.Mode == ConnectPerOp:
		return noStampsConnect
	case w.NoKernelView:
		return noStampsNotAsked
	}
	return ""
}

// kernelSampleMin is the number of stamped requests a run's kernel view
// aims at (KernelView): enough for its p99 to rest on ten requests.
const kernelSampleMin = 1000

// kernelRecorder collects a run's kernel view from its connections; safe
// for concurrent use.
type kernelRecorder struct {
	rec  *latency.Recorder
	lost atomic.Int64
	// why is the first reason a connection gave for having no stamps.
	why atomic.Pointer[string]
	// every is the sample's block (KernelView): one request of every
	// block of that many is stamped, at a place drawn from seed.
	every int64
	seed  uint64
}

// newKernelRecorder returns the recorder of a run of w, nil when the run
// takes no kernel view.
func newKernelRecorder(w *WorkloadConfig) *kernelRecorder {
	if kernelReason(w) != "" {
		return nil
	}
	rec, err := newRecorder()
	if err != nil {
		return nil
	}
	return &kernelRecorder{rec: rec, every: sampleEvery(w.Rate, w.Duration, w.MaxOps), seed: w.seed}
}

// sampleEvery is the sample's block for a run of rate requests a second
// for d, stopped after max requests when positive: the expected count over
// kernelSampleMin, at least 1.
func sampleEvery(rate float64, d time.Duration, maxOps int64) int64 {
	n := rate * d.Seconds()
	if maxOps > 0 && float64(maxOps) < n {
		n = float64(maxOps)
	}
	if !(n >= 2*kernelSampleMin) { // NaN too
		return 1
	}
	return int64(n) / kernelSampleMin
}

// sampled reports whether request seq (latency.Request's Seq) is the one
// stamped in its block.
func (k *kernelRecorder) sampled(seq int64) bool {
	if k == nil {
		return false
	}
	if k.every <= 1 {
		return true
	}
	block := uint64(seq / k.every)
	return uint64(seq%k.every) == mix64(k.seed^block)%uint64(k.every)
}

// mix64 is splitmix64's finaliser: a block's number to its sample's place.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// fill sets res's kernel view, or says why it has none.
func (k *kernelRecorder) fill(res *RunResult, w *WorkloadConfig) {
	if k == nil {
		if res.NoKernelStamps = kernelReason(w); res.NoKernelStamps == "" {
			res.NoKernelStamps = noStampsNone
		}
		return
	}
	if k.rec.Count() == 0 {
		res.NoKernelStamps = noStampsNone
		if why := k.why.Load(); why != nil {
			res.NoKernelStamps = *why
		}
		return
	}
	res.Kernel = &KernelView{Response: k.rec.Summary(0), Histogram: k.rec.Snapshot(), StampsLost: k.lost.Load()}
}

// connKernel is a connection's transmit stamps: the stamper and the key
// of the sampled request in flight.
type connKernel struct {
	tx     *kstamp.TX
	id     uint32
	hasID  bool
	failed bool // EnablePerSend refused: not tried again
}

// enableTX sets per-send transmit stamps up on c, once its reads are the
// kernel's (kr), for a request whose run takes the kernel view.
func (c *conn) enableTX(st *stamps) {
	if st == nil || st.kernel == nil || c.kv != nil {
		return
	}
	c.kv = &connKernel{}
	if c.kr == nil {
		c.kv.failed = true
		st.kernel.note("the connection's replies cannot be read in the kernel (TLS)")
		return
	}
	tx, err := kstamp.EnablePerSend(c.nc)
	if err != nil {
		c.kv.failed = true
		why := err.Error()
		if errors.Is(err, kstamp.ErrTXUnsupported) {
			why = "the kernel gives no transmit stamps: " + why
		}
		st.kernel.note(why)
		return
	}
	c.kv.tx, c.kr.TX = tx, tx
}

// note keeps why as the run's reason for having no view, if it is the
// first.
func (k *kernelRecorder) note(why string) { k.why.CompareAndSwap(nil, &why) }

// write sends the command in c.wbuf: through the transmit stamper when
// the connection has one (which keeps its keys, and stamps the send when
// st's request is in the sample), else as a plain write.
//
// A connection read in the kernel (kstamp, an open-loop run's) sends
// through its reader, inside the wait for the reply, which spares the
// reply's path a receive that finds nothing; the send's return is then
// st's left.
func (c *conn) write(st *stamps) error {
	kv := c.kv
	tx := kv != nil && kv.tx != nil
	stamp := tx && st != nil && st.sample
	var (
		id  uint32
		err error
	)
	switch {
	case c.kr != nil:
		var left *time.Time
		if st != nil && st.left != nil && st.left.IsZero() {
			left = st.left
		}
		id, err = c.kr.Send(c.wbuf, stamp, left)
	case tx:
		_, id, err = kv.tx.Write(c.wbuf, stamp)
		if stamp && err == nil {
			// Taken now, so that the reply's wait sleeps instead of
			// waking at once for the stamp (POLLERR).
			kv.tx.Collect(id)
		}
	default:
		_, err = c.nc.Write(c.wbuf)
		return err
	}
	if tx {
		kv.hasID = stamp && err == nil
		kv.id = id
	}
	return err
}

// replyTX records the kernel view of the sampled request whose reply was
// just read.
func (c *conn) replyTX(st *stamps) {
	if st == nil || st.kernel == nil || c.kv == nil || c.kv.tx == nil || !c.kv.hasID {
		return
	}
	c.kv.hasID = false
	at, ok := c.kv.tx.Take(c.kv.id)
	arr, stamped := c.kr.Stamped()
	if !ok || !stamped || arr.Before(at) {
		st.kernel.lost.Add(1)
		return
	}
	st.kernel.rec.Record(arr.Sub(at))
}

// noteKernel says why res has no kernel view, when it has none and no
// reason yet (a closed-loop run, another engine).
func noteKernel(res *RunResult, w *WorkloadConfig) {
	if res != nil && res.Kernel == nil && res.NoKernelStamps == "" {
		(*kernelRecorder)(nil).fill(res, w)
	}
}
