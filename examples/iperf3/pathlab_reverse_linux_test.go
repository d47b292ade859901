//go:build linux

package main

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/internal/pathlab"
)

// TestLabUDPReverseLocalRefusals: in a -R test at 1.5 times the shaped
// rate our server sends, and its own tbf queue (B's egress) refuses
// datagrams. By default the server waits for its queue, as iperf3 does;
// with the client's --keep-rate (carried in the parameters) it drops.
// Either way the client's -J shows the server host's refusals in sum_sent
// (local_retries or local_drops, beside lost_packets), its text names the
// server's host, and none of them is counted as sent beyond what the
// shaper let through, nor as lost. Before the results exchange carried
// them, the client's document had neither key.
func TestLabUDPReverseLocalRefusals(t *testing.T) {
	p := newLabPeers(t, udpLabRate)
	if p == nil {
		return
	}
	port := p.serve(t, p.ours)
	const rate = 1.5 * udpLabRate
	for _, keep := range []bool{false, true} {
		t.Run("keep-rate="+strconv.FormatBool(keep), func(t *testing.T) {
			args := []string{"-u", "-R", "-t", "1", "-l", "1400", "-b", strconv.FormatFloat(rate, 'f', 0, 64)}
			if keep {
				args = append(args, "--keep-rate")
			}
			for try := 1; try <= labTries; try++ {
				pr := pathlab.StartCPUPressure()
				before := p.lab.B.Qdisc(t).Drops
				r := p.client(t, p.ours, port, args...)
				qDrops := p.lab.B.Qdisc(t).Drops - before
				sent, recv := r.End.SumSent, r.End.SumReceived
				t.Logf("try %d: sent %+v, received %+v; the server's qdisc dropped %d, the client's buffer %d", try, sent, recv, qDrops, r.rcvbufDrops)
				// What the server's host took is at most what its shaper
				// passes: the rate, the 256 KiB bucket, 20 ms of queue and
				// a datagram (the run's second, 5 % for its edges).
				maxBits := udpLabRate + 8*(pathlab.DefaultBurst+udpLabRate/8*pathlab.DefaultLatency.Seconds()+1400)
				assert.LessOrEqual(t, float64(sent.Packets)*1400*8, maxBits*1.05, "sent beyond the shaper")
				assert.LessOrEqual(t, recv.LostPackets, r.rcvbufDrops+recv.Packets/100,
					"lost %d of %d; %d in the client's buffer", recv.LostPackets, recv.Packets, r.rcvbufDrops)
				if qDrops == 0 {
					// A server the machine starved may never fill its queue.
					if starved(t, pr) && try < labTries {
						continue
					}
					require.Positive(t, qDrops, "the server's shaper dropped nothing at %.0f bit/s across %.0f", rate, udpLabRate)
				}
				if keep {
					assert.Positive(t, sent.LocalDrops, "the server's host refused %d skbs; the client's -J shows no local_drops", qDrops)
					assert.Zero(t, sent.LocalRetries, "the server kept the rate: it waited for nothing")
				} else {
					assert.Positive(t, sent.LocalRetries, "the server's host refused %d skbs; the client's -J shows no local_retries", qDrops)
					assert.Zero(t, sent.LocalDrops, "our server waits for its queue: it drops nothing")
				}

				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				out, err := p.lab.A.Command(ctx, p.ours, append([]string{"-c", p.lab.B.Addr.String(), "-p", strconv.Itoa(port)}, args...)...).CombinedOutput()
				cancel()
				require.NoError(t, err, "%s", out)
				line := "note: the server's host's queue refused "
				if keep {
					line = "note: dropped by the server's host: "
				}
				assert.Contains(t, string(out), line)
				assert.NotContains(t, string(out), "this host", "the client sent nothing: the refusals were the server's")
				return
			}
		})
	}
}
