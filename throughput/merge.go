package throughput

import (
	"encoding/json"
	"time"

	"github.com/netperfkit/netperfkit/internal/iperfwire"
)

// serverOutput is the part of an iperf3 -J document the client reads from
// server_output_json to fill in the server's TCP statistics.
type serverOutput struct {
	Intervals []struct {
		Streams []struct {
			Socket      int             `json:"socket"`
			ID          *iperfwire.Int  `json:"id"`
			Start       iperfwire.Float `json:"start"`
			Seconds     iperfwire.Float `json:"seconds"`
			Sender      bool            `json:"sender"`
			Retransmits *iperfwire.Int  `json:"retransmits"`
			SndCwnd     *iperfwire.Int  `json:"snd_cwnd"`
			SndWnd      *iperfwire.Int  `json:"snd_wnd"`
			Reorder     *iperfwire.Int  `json:"reorder"`
			RTT         *iperfwire.Int  `json:"rtt"`
			RTTVar      *iperfwire.Int  `json:"rttvar"`
			PMTU        *iperfwire.Int  `json:"pmtu"`
			Omitted     bool            `json:"omitted"`
			TCPLimits   json.RawMessage `json:"tcp_limits"`
		} `json:"streams"`
	} `json:"intervals"`
}

func intOr0(v *iperfwire.Int) int64 {
	if v == nil {
		return 0
	}
	return int64(*v)
}

// mergeServerTCPInfo copies the server's per-interval TCP_INFO for the
// streams the server sent into the client's intervals, matched by interval
// index and stream position, so reverse and bidirectional tests report
// retransmits, cwnd and RTT where iperf3 reports nothing (its issues 71, 803).
func mergeServerTCPInfo(r *Result, raw json.RawMessage) {
	if len(raw) == 0 || r.Config.UDP {
		return
	}
	var so serverOutput
	if err := json.Unmarshal(raw, &so); err != nil {
		return
	}
	for i := range r.Intervals {
		// Server intervals line up with ours only when both used the same
		// interval (a netperfkit server follows the client's); a stock
		// iperf3 server reports every second whatever the client asks.
		if i >= len(so.Intervals) || len(so.Intervals[i].Streams) == 0 {
			break
		}
		iv := &r.Intervals[i]
		srv := so.Intervals[i].Streams
		if ours := (iv.End - iv.Start).Seconds(); !within(float64(srv[0].Seconds), ours, 0.2*ours+0.05) {
			break
		}
		for j := range iv.Streams {
			st := &iv.Streams[j]
			if !st.Reverse || st.TCP != nil || j >= len(srv) {
				continue
			}
			ss := srv[j]
			if !ss.Sender || ss.Retransmits == nil {
				continue
			}
			st.Retransmits = int64(*ss.Retransmits)
			st.TCP = &TCPInfo{SndCwndBytes: intOr0(ss.SndCwnd), RTT: time.Duration(intOr0(ss.RTT)) * time.Microsecond,
				RTTVar: time.Duration(intOr0(ss.RTTVar)) * time.Microsecond, PMTU: intOr0(ss.PMTU),
				SndWndBytes: intOr0(ss.SndWnd), ReorderSeen: intOr0(ss.Reorder)}
			st.Limits = decodeLimits(ss.TCPLimits)
		}
		sumDownloadRetransmits(iv)
	}
}

// sumDownloadRetransmits recomputes an interval's download retransmits from
// its reverse streams, after the server's TCP_INFO was merged into them.
func sumDownloadRetransmits(iv *Interval) {
	if iv.Download == nil {
		return
	}
	iv.Download.Retransmits = 0
	for _, st := range iv.Streams {
		if st.Reverse {
			iv.Download.Retransmits += st.Retransmits
		}
	}
}
