package latency

import (
	"context"
	"time"

	wire "github.com/netperfkit/netperfkit/internal/sockperfwire"
)

func (r *run) pingPong(ctx context.Context) error {
	msg := r.message()
	var seq uint64
	if err := r.warmUp(msg, &seq); err != nil {
		return err
	}
	w := newWaiter(r)
	size := uint32(len(msg))
	r.setWindow()
	// Every way out of the loop but a failure, cancellation included, goes
	// through its end, which times the run.
	for i := int64(0); r.cfg.Count <= 0 || i < r.cfg.Count; i++ {
		if i&255 == 0 && (ctx.Err() != nil || r.cancelled.Load()) {
			break
		}
		seq++
		wire.Header{Seq: seq, Flags: wire.FlagClient | wire.FlagPong, Length: size}.Put(msg)
		tx := r.now()
		if r.end >= 0 && tx >= r.end {
			break
		}
		if err := r.tr.write(msg); err != nil {
			if r.cancelled.Load() {
				break
			}
			return err
		}
		r.res.Sent++
		r.asked++
		id, hasID := r.k.sent()
		cancelled, err := w.await(seq, tx, id, hasID)
		if err != nil {
			return err
		}
		if cancelled {
			break
		}
	}
	// The run lasts as long as its messages: the final wait only collects
	// late replies, and a run cut short does not wait.
	r.res.RunTime = time.Duration(r.now() - r.start)
	if ctx.Err() == nil {
		if err := w.drain(seq); err != nil {
			return err
		}
	}
	if ctx.Err() != nil {
		w.abandon(r.now())
	}
	w.settle(seq)
	return nil
}
