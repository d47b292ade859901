package iperf3doc

import "github.com/netperfkit/netperfkit/internal/flowmodel"

import "time"

// rttStats are a stream's max/min/mean RTT and max cwnd over its interval
// reports, as iperf3's end section gives them.
type rttStats struct {
	maxCwnd, maxSndWnd  int64
	reorder             int64 // the last interval's, as iperf3 reports it
	maxRTT, minRTT, avg time.Duration
}

func streamRTTStats(r *flowmodel.Result, id int) rttStats {
	var st rttStats
	var n int64
	var sum time.Duration
	for _, iv := range r.Intervals {
		for _, si := range iv.Streams {
			if si.ID != id || si.TCP == nil || si.TCP.RTT <= 0 {
				continue
			}
			n++
			sum += si.TCP.RTT
			st.maxRTT = max(st.maxRTT, si.TCP.RTT)
			if st.minRTT == 0 || si.TCP.RTT < st.minRTT {
				st.minRTT = si.TCP.RTT
			}
			st.maxCwnd = max(st.maxCwnd, si.TCP.SndCwndBytes)
			st.maxSndWnd = max(st.maxSndWnd, si.TCP.SndWndBytes)
			st.reorder = si.TCP.ReorderSeen
		}
	}
	if n > 0 {
		st.avg = sum / time.Duration(n)
	}
	return st
}

// secs is a duration in seconds, as iperf3's documents and text carry it.
func secs(d time.Duration) float64 { return d.Seconds() }

// micros is a duration in whole microseconds, as TCP_INFO and iperf3 carry RTTs.
func micros(d time.Duration) int64 { return d.Microseconds() }

// percent is part of whole in percent, 0 for no whole.
func percent(part, whole int64) float64 {
	if whole <= 0 {
		return 0
	}
	return 100 * float64(part) / float64(whole)
}
