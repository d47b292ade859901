package latency

import (
	"runtime"
	"slices"
	"time"
)

// txStamper is a transport that takes its writes' kernel transmit stamps
// (spinTransport on linux, when the run asked for them).
type txStamper interface {
	// sentKey is the stamp key of the last write, false without stamps.
	sentKey() (uint32, bool)
	// takeTX returns the transmit stamp of the write whose key is id.
	takeTX(id uint32) (time.Time, bool)
	// noTX says why the transport has no stamps, empty when it has.
	noTX() string
}

// kernelView is a ping-pong run's kernel-to-kernel round trips: from each
// message's software transmit stamp to its reply's receive stamp, both
// taken by the client's kernel, so none of the client's scheduling is in
// them.
type kernelView struct {
	st      txStamper // nil when the run has no stamps
	why     string    // why st is nil
	rec     *Recorder
	samples []time.Duration // aligned with run.samples; -1 where none
	lost    int64
}

// newKernelView returns the view of a run of c on tr; ping-pong runs that
// ask for it only.
func newKernelView(tr transport, c *PingPongConfig, rec *Recorder) *kernelView {
	k := &kernelView{rec: rec}
	st, ok := tr.(txStamper)
	switch {
	case !c.KernelStamps:
		k.why = "not asked for (PingPongConfig.KernelStamps)"
	case c.MPS > 0:
		k.why = "under-load run (the kernel view is ping-pong's)"
	case !ok:
		k.why = "not linux (" + runtime.GOOS + ")"
	case st.noTX() != "":
		k.why = st.noTX()
	default:
		k.st = st
	}
	return k
}

// sent returns the stamp key of the message just written.
func (k *kernelView) sent() (uint32, bool) {
	if k == nil || k.st == nil {
		return 0, false
	}
	return k.st.sentKey()
}

// rtt is the kernel view of the message whose stamp key is id and whose
// reply arrived (kernel receive stamp) at arrived: -1 when a stamp is
// missing, counted lost.
func (k *kernelView) rtt(id uint32, hasID bool, arrived time.Time) time.Duration {
	if k == nil || k.st == nil {
		return -1
	}
	at, ok := time.Time{}, false
	if hasID {
		at, ok = k.st.takeTX(id)
	}
	if !ok || arrived.IsZero() || arrived.Before(at) {
		k.lost++
		return -1
	}
	return arrived.Sub(at)
}

// keep records d, a measured message's kernel view, in the sample at i
// (appended when i is len(samples)).
func (k *kernelView) keep(d time.Duration, i int, keepSamples bool) {
	if k == nil || k.st == nil {
		return
	}
	if d >= 0 {
		k.rec.Record(d)
	}
	if !keepSamples {
		return
	}
	if i == len(k.samples) {
		k.samples = append(k.samples, d)
	} else if i >= 0 && i < len(k.samples) {
		k.samples[i] = d
	}
}

// finish fills res's kernel view. drop marks the places of samples the
// run drops (late replies that never came).
func (k *kernelView) finish(res *PingPongResult, drop []bool, level float64, exact bool) {
	if k.st == nil {
		res.NoKernelStamps = k.why
		return
	}
	res.KernelStampsLost = k.lost
	switch {
	case res.Recorder.Count() == 0:
		res.NoKernelStamps = "no message was measured (no reply came in the measurement window)"
		return
	case k.rec.Count() == 0:
		res.NoKernelStamps = "the kernel gave no stamp for any measured message"
		return
	}
	if len(drop) == len(k.samples) {
		i := 0
		k.samples = slices.DeleteFunc(k.samples, func(time.Duration) bool { i++; return drop[i-1] })
	}
	s := k.rec.Summary(level)
	if exact {
		res.KernelSamples = k.samples
		s = summarizeSamples(slices.DeleteFunc(slices.Clone(k.samples), func(d time.Duration) bool { return d < 0 }), level)
	}
	res.KernelRTT = &s
}
