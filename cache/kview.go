package cache

import (
	"errors"
	"sync/atomic"

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
type KernelView struct {
	// Response summarises the kernel-to-kernel response times.
	Response latency.Summary `json:"response"`
	// Histogram holds them in nanoseconds; nil when empty.
	Histogram *hdrhistogram.Histogram `json:"-"`
	// StampsLost counts the successful requests without the view: the
	// kernel dropped a transmit stamp (its error queue was full) or gave
	// the reply no receive stamp.
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

// kernelRecorder collects a run's kernel view from its connections; safe
// for concurrent use.
type kernelRecorder struct {
	rec  *latency.Recorder
	lost atomic.Int64
	// why is the first reason a connection gave for having no stamps.
	why atomic.Pointer[string]
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
	return &kernelRecorder{rec: rec}
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
// of the request in flight.
type connKernel struct {
	tx     *kstamp.TX
	id     uint32
	hasID  bool
	failed bool // EnableTX refused: not tried again
}

// enableTX sets transmit stamps up on c, once its reads are the kernel's
// (kr), for a request whose run takes the kernel view.
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
	tx, err := kstamp.EnableTX(c.nc)
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

// sentTX records the write of n bytes that carried a request.
func (c *conn) sentTX(n int) {
	if c.kv != nil && c.kv.tx != nil {
		c.kv.id, c.kv.hasID = c.kv.tx.Sent(n), true
		// Taken now, so that the reply's poll(2) sleeps instead of
		// waking at once for the stamp (POLLERR).
		c.kv.tx.Collect(c.kv.id)
	}
}

// replyTX records the kernel view of the request whose reply was just
// read.
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
