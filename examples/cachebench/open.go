package main

import (
	"runtime"
	"time"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/cache/median"
	"github.com/netperfkit/netperfkit/latency"
)

// row is one engine and mode's E3 row with, for an open-loop run, the
// medians of its schedule, which only this tool prints: its JSON is
// median.Result's with the open-loop keys beside them.
type row struct {
	*median.Result
	openLoop
	// Procs is the GOMAXPROCS the runs had (-procs).
	Procs int `json:"gomaxprocs"`
}

// openLoop is what an open-loop run (-rate) adds to a row: the target
// rate, the medians of the achieved rate (operations started per second),
// of the service-time p99 (from each operation's actual start) and of the
// p99s of the client's own share (latency.ScheduleResult's ClientLateness
// and ReceiveWake: large ones mean the figures are partly the client's),
// and the late, unstarted and reclassified operations summed over runs
// (Reclassified: operations whose wait behind one the client itself sent
// late was counted as the client's delay, not the server's).
type openLoop struct {
	TargetRate        float64                       `json:"target_rate,omitempty"`
	AchievedRate      *latency.Range[float64]       `json:"achieved_rate,omitempty"`
	ServiceP99        *latency.Range[time.Duration] `json:"service_p99_us,omitempty"`
	Late              int64                         `json:"late,omitempty"`
	Unstarted         int64                         `json:"unstarted,omitempty"`
	Reclassified      int64                         `json:"reclassified,omitempty"`
	ClientLatenessP99 *latency.Range[time.Duration] `json:"client_lateness_p99_us,omitempty"`
	ReceiveWakeP99    *latency.Range[time.Duration] `json:"receive_wake_p99_us,omitempty"`
	// KernelStamped is how many successful requests, over all runs, were
	// in the kernel view's sample (cache.KernelView).
	KernelStamped int64 `json:"kernel_stamped,omitempty"`
}

// newRow is a's row, run on procs Ps, with its open-loop figures when its
// runs are open-loop.
func newRow(a *median.Result, procs int) *row {
	r := &row{Result: a, Procs: procs}
	if a == nil || len(a.Results) == 0 || a.Results[0].Schedule == nil {
		return r
	}
	var sched []*latency.ScheduleResult
	for _, x := range a.Results {
		if x != nil && x.Schedule != nil {
			sched = append(sched, x.Schedule)
			r.Late += x.Schedule.Late
			r.Unstarted += x.Schedule.Unstarted
			r.Reclassified += x.Schedule.Reclassified
		}
	}
	r.TargetRate = a.Results[0].TargetRate
	r.KernelStamped = kernelStamped(a.Results)
	ach := latency.AggregateFunc(sched, func(s *latency.ScheduleResult) float64 { return s.AchievedRate })
	svc := latency.AggregateFunc(sched, func(s *latency.ScheduleResult) time.Duration { return s.Service.P99 })
	cl := latency.AggregateFunc(sched, func(s *latency.ScheduleResult) time.Duration { return s.ClientLateness.P99 })
	wake := latency.AggregateFunc(sched, func(s *latency.ScheduleResult) time.Duration { return s.ReceiveWake.P99 })
	r.AchievedRate, r.ServiceP99, r.ClientLatenessP99, r.ReceiveWakeP99 = &ach, &svc, &cl, &wake
	return r
}

// rowOf is the runs' row (nil when none).
func rowOf(runs ...*cache.RunResult) *row {
	a := median.Summarize(runs)
	if a == nil {
		return nil
	}
	return newRow(a, runtime.GOMAXPROCS(0))
}
