package throughput

import "encoding/json"

// serverOutput is the part of an iperf3 -J document the client reads from
// server_output_json to fill in the server's TCP statistics.
type serverOutput struct {
	Intervals []struct {
		Streams []struct {
			Socket      int       `json:"socket"`
			ID          *wireInt  `json:"id"`
			Start       wireFloat `json:"start"`
			Seconds     wireFloat `json:"seconds"`
			Sender      bool      `json:"sender"`
			Retransmits *wireInt  `json:"retransmits"`
			SndCwnd     *wireInt  `json:"snd_cwnd"`
			RTT         *wireInt  `json:"rtt"`
			RTTVar      *wireInt  `json:"rttvar"`
			PMTU        *wireInt  `json:"pmtu"`
			Omitted     bool      `json:"omitted"`
		} `json:"streams"`
	} `json:"intervals"`
}

// mergeServerTCPInfo copies the server's per-interval TCP_INFO for the
// streams the server sent into the client's intervals, matched by interval
// index and stream position, so reverse and bidirectional tests report
// retransmits, cwnd and RTT where iperf3 reports nothing (its issues 71, 803).
func mergeServerTCPInfo(r *Result, raw json.RawMessage) {
	if len(raw) == 0 || r.Protocol != "tcp" {
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
		if ours := iv.EndSeconds - iv.StartSeconds; !within(float64(srv[0].Seconds), ours, 0.05*ours+0.01) {
			break
		}
		for j := range iv.Streams {
			st := &iv.Streams[j]
			if !st.Reverse || st.TCPInfo || j >= len(srv) {
				continue
			}
			ss := srv[j]
			if !ss.Sender || ss.Retransmits == nil {
				continue
			}
			st.TCPInfo = true
			st.Retransmits = int64(*ss.Retransmits)
			if ss.SndCwnd != nil {
				st.SndCwndBytes = int64(*ss.SndCwnd)
			}
			if ss.RTT != nil {
				st.RTTUs = int64(*ss.RTT)
			}
			if ss.RTTVar != nil {
				st.RTTVarUs = int64(*ss.RTTVar)
			}
			if ss.PMTU != nil {
				st.PMTU = int64(*ss.PMTU)
			}
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

// fillRTTStats derives each stream's max/min/mean RTT and max cwnd from its
// interval reports, as iperf3's end section does.
func fillRTTStats(r *Result) {
	for i := range r.Streams {
		sr := &r.Streams[i]
		var n, sum int64
		for _, iv := range r.Intervals {
			for _, st := range iv.Streams {
				if st.ID != sr.ID || !st.TCPInfo || st.RTTUs <= 0 {
					continue
				}
				n++
				sum += st.RTTUs
				if st.RTTUs > sr.MaxRTTUs {
					sr.MaxRTTUs = st.RTTUs
				}
				if sr.MinRTTUs == 0 || st.RTTUs < sr.MinRTTUs {
					sr.MinRTTUs = st.RTTUs
				}
				if st.SndCwndBytes > sr.MaxSndCwndBytes {
					sr.MaxSndCwndBytes = st.SndCwndBytes
				}
			}
		}
		if n > 0 {
			sr.MeanRTTUs = sum / n
		}
	}
}
