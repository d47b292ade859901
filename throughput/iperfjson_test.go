package throughput

import (
	"encoding/json"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/internal/iperf3doc"
)

// keyPaths lists every key path of a JSON document, arrays collapsed to [].
func keyPaths(v any, prefix string, out map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			out[prefix+"."+k] = true
			keyPaths(e, prefix+"."+k, out)
		}
	case []any:
		for _, e := range x {
			keyPaths(e, prefix+"[]", out)
		}
	}
}

// Keys of iperf3's document that this package does not produce: socket-level
// details it has no portable source for.
var ignoredIperfKeys = []string{"tcp_mss_default", ".tos", "system_info"}

// TestIperfJSONShape checks that our -J document has every key a real
// iperf3 3.12 document of the same kind has (fixtures in testdata/).
func TestIperfJSONShape(t *testing.T) {
	addr, _ := startServer(t, nil)
	cases := map[string]Config{
		"tcp":       {Duration: time.Second},
		"udp":       {UDP: true, Bitrate: 10e6, Duration: time.Second},
		"bidir":     {Bidir: true, Duration: time.Second},
		"reverse":   {Reverse: true, Streams: 2, Duration: time.Second},
		"udp-bidir": {UDP: true, Bidir: true, Bitrate: 5e6, Duration: time.Second},
	}
	for name, cfg := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			raw, err := os.ReadFile("testdata/iperf3-3.12-" + name + ".json")
			require.NoError(t, err)
			var want any
			require.NoError(t, json.Unmarshal(raw, &want))
			res, err := Run(ctxT(t, 30*time.Second), addr, &cfg)
			require.NoError(t, err)
			doc, err := iperfJSON(res)
			require.NoError(t, err)
			var got any
			require.NoError(t, json.Unmarshal(doc, &got))
			wk, gk := map[string]bool{}, map[string]bool{}
			keyPaths(want, "", wk)
			keyPaths(got, "", gk)
			var missing []string
		next:
			for k := range wk {
				for _, ig := range ignoredIperfKeys {
					if strings.Contains(k, ig) {
						continue next
					}
				}
				if !gk[k] {
					missing = append(missing, k)
				}
			}
			sort.Strings(missing)
			assert.Empty(t, missing, "keys iperf3 writes and we do not")

			// Values scripts read.
			var d iperf3doc.Doc
			require.NoError(t, json.Unmarshal(doc, &d))
			if cfg.UDP {
				require.NotNil(t, d.End.Sum)
				assert.Equal(t, *d.End.Sum.Packets, *d.End.SumReceived.Packets)
				assert.GreaterOrEqual(t, *d.End.Sum.LostPercent, 0.0)
				// 3.21's flags: UDP sum_sent is the sender's, sum_received
				// the receiver's, whichever way the data went; sum is this
				// side's role.
				assert.True(t, d.End.SumSent.Sender)
				assert.False(t, d.End.SumReceived.Sender)
				assert.Equal(t, !cfg.Reverse, d.End.Sum.Sender)
			} else {
				require.NotNil(t, d.End.SumSent)
				s := res.Upload
				if cfg.Reverse {
					s = res.Download
				}
				assert.Equal(t, s.Sent.Bytes, d.End.SumSent.Bytes)
				assert.Equal(t, s.Received.Bytes, d.End.SumReceived.Bytes)
			}
			assert.Equal(t, cfg.Bidir, d.End.SumSentBidirReverse != nil)
			assert.Greater(t, d.End.CPU.HostTotal, 0.0)
			assert.Equal(t, res.Cookie, d.Start.Cookie)
			assert.Len(t, d.Intervals, len(res.Intervals))
			if cfg.Reverse && tcpInfoAvailable {
				// The server's TCP_INFO for the streams it sent is in the
				// client's document, unlike iperf3's -R output.
				require.NotEmpty(t, d.Intervals)
				require.NotNil(t, d.Intervals[0].Streams[0].Retransmits)
				require.NotNil(t, d.Intervals[0].Streams[0].RTT)
				assert.Greater(t, *d.Intervals[0].Streams[0].RTT, int64(0))
				require.NotNil(t, d.Intervals[0].Sum.Retransmits)
			}
			if !cfg.UDP && !cfg.Reverse && tcpInfoAvailable {
				// 3.21's TCP_INFO keys are there. Their values are the
				// kernel's (TestReadTCPInfo): a sample may see a zero
				// window when a starved receiver has filled its buffer.
				require.NotEmpty(t, d.Intervals)
				s0 := d.Intervals[0].Streams[0]
				require.NotNil(t, s0.SndWnd)
				assert.GreaterOrEqual(t, *s0.SndWnd, int64(0))
				require.NotNil(t, s0.Reorder)
				snd := d.End.Streams[0].Sender
				require.NotNil(t, snd.MaxSndWnd)
				assert.GreaterOrEqual(t, *snd.MaxSndWnd, *s0.SndWnd)
			}
		})
	}
}

// TestIperfJSONSenderKeysWithoutTCPInfo: a TCP sender's summary carries
// 3.21's max_snd_cwnd, max_snd_wnd, max_rtt, min_rtt, mean_rtt and reorder
// keys even when no TCP_INFO reached this side (the client of a -R test
// against a server that sends none): 3.21 writes 0 there, and jq scripts
// read the keys unconditionally.
func TestIperfJSONSenderKeysWithoutTCPInfo(t *testing.T) {
	r := &Result{Role: "client", Config: Config{Reverse: true, Duration: time.Second},
		Streams: []StreamResult{{ID: 1, Reverse: true, Totals: Totals{Duration: time.Second,
			Sent: Counts{Bytes: 1 << 20, Retransmits: 2}, Received: Counts{Bytes: 1 << 20}}}}}
	doc, err := iperfJSON(r)
	require.NoError(t, err)
	var d struct {
		End struct {
			Streams []struct {
				Sender map[string]any `json:"sender"`
			} `json:"streams"`
		} `json:"end"`
	}
	require.NoError(t, json.Unmarshal(doc, &d))
	require.Len(t, d.End.Streams, 1)
	for _, k := range []string{"max_snd_cwnd", "max_snd_wnd", "max_rtt", "min_rtt", "mean_rtt", "reorder"} {
		assert.Equal(t, 0.0, d.End.Streams[0].Sender[k], k)
	}
}

// extrasText is what iperf3's text report adds after its summary for r:
// the notes on the sender's limits and its host's refusals.
func extrasText(t *testing.T, r *Result) string {
	t.Helper()
	var b strings.Builder
	iperf3doc.NewTextReport(&b, &r.Config, iperf3doc.Options{}).Extras(r)
	return b.String()
}
