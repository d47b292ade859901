package throughput

import (
	"encoding/json"
	"net"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/internal/peertest"
)

// The comparisons below run our tool and iperf3 side by side in one
// process, alternating round by round, and report both rates and their
// ratio (loopback on a shared 2-core machine: absolute numbers are for
// scale only). Run them with -benchtime=3x: each iteration is one round of
// both tools.

const benchSecs = 2

// iperf3Client runs a stock iperf3 client and returns the received
// bits/s (sum_received, or sum for UDP) and the receiver's loss in percent.
func iperf3Client(b *testing.B, addr string, args ...string) (bps, lossPct float64) {
	b.Helper()
	bin := peertest.Binary(b, "apt-get install iperf3", "iperf3")
	h, p, _ := net.SplitHostPort(addr)
	all := append([]string{"-c", h, "-p", p, "-J", "-t", strconv.Itoa(benchSecs)}, args...)
	for attempt := 0; ; attempt++ {
		out, err := exec.Command(bin, all...).Output()
		var doc struct {
			End struct {
				SumReceived struct {
					BitsPerSecond float64 `json:"bits_per_second"`
					LostPercent   float64 `json:"lost_percent"`
				} `json:"sum_received"`
			} `json:"end"`
			Error string `json:"error"`
		}
		_ = json.Unmarshal(out, &doc)
		if (err != nil || doc.Error != "") && attempt < 20 {
			time.Sleep(100 * time.Millisecond) // a stock server between tests
			continue
		}
		if err != nil || doc.Error != "" {
			b.Fatalf("iperf3 %v: %v %s", all, err, doc.Error)
		}
		return doc.End.SumReceived.BitsPerSecond, doc.End.SumReceived.LostPercent
	}
}

func ourClient(b *testing.B, addr string, cfg Config) (bps, lossPct float64) {
	b.Helper()
	cfg.Duration, cfg.Interval = benchSecs*time.Second, -1
	res, err := runRetry(b, addr, &cfg)
	if err != nil {
		b.Fatal(err)
	}
	return res.Upload.Received.BitsPerSecond, res.Upload.Received.LostPercent
}

type pair struct {
	ours, theirs, loss float64
	label              string // what "theirs" is; "iperf3" when empty
}

func (p *pair) report(b *testing.B) {
	n := float64(b.N)
	if p.label == "" {
		p.label = "iperf3"
	}
	b.ReportMetric(p.ours/n, "ours-bits/s")
	b.ReportMetric(p.theirs/n, p.label+"-bits/s")
	b.ReportMetric(p.ours/p.theirs, "ratio")
	if p.loss > 0 {
		b.ReportMetric(p.loss/n, "ours-lost-%")
	}
	b.ReportMetric(0, "ns/op")
}

// BenchmarkTCPClientVsIperf3 runs our client and iperf3's, alternating,
// against one stock iperf3 server: at iperf3's block length (128 KiB) and
// with our default (1 MiB), for 1 and 4 streams.
func BenchmarkTCPClientVsIperf3(b *testing.B) {
	addr := startIperf3Server(b)
	for _, streams := range []int{1, 4} {
		for _, blk := range []int{iperfTCPBlockLen, 0} {
			name := "P" + strconv.Itoa(streams) + "-len128K"
			if blk == 0 {
				name = "P" + strconv.Itoa(streams) + "-ourdefaults"
			}
			b.Run(name, func(b *testing.B) {
				var p pair
				for i := 0; i < b.N; i++ {
					o, _ := ourClient(b, addr, Config{Streams: streams, BlockLen: blk})
					t, _ := iperf3Client(b, addr, "-P", strconv.Itoa(streams))
					p.ours += o
					p.theirs += t
				}
				p.report(b)
			})
		}
	}
}

// BenchmarkServerVsIperf3Server runs the stock iperf3 client against our
// server and against iperf3's own, alternating.
func BenchmarkServerVsIperf3Server(b *testing.B) {
	theirs := startIperf3Server(b)
	ours, _ := startServer(b, nil)
	for _, streams := range []int{1, 4} {
		b.Run("P"+strconv.Itoa(streams), func(b *testing.B) {
			var p pair
			for i := 0; i < b.N; i++ {
				o, _ := iperf3Client(b, ours, "-P", strconv.Itoa(streams))
				t, _ := iperf3Client(b, theirs, "-P", strconv.Itoa(streams))
				p.ours += o
				p.theirs += t
			}
			p.report(b)
		})
	}
}

// BenchmarkUDPUnlimitedVsIperf3 sends 1400-byte datagrams at unlimited
// rate, each tool against its own server, and compares received goodput.
func BenchmarkUDPUnlimitedVsIperf3(b *testing.B) {
	theirs := startIperf3Server(b)
	ours, _ := startServer(b, nil)
	var p pair
	for i := 0; i < b.N; i++ {
		o, loss := ourClient(b, ours, Config{UDP: true, Bitrate: Unlimited, BlockLen: 1400})
		t, _ := iperf3Client(b, theirs, "-u", "-b", "0", "-l", "1400")
		p.ours += o
		p.theirs += t
		p.loss += loss
	}
	p.report(b)
}

// BenchmarkUDPPlainVsFastPath compares our UDP sender and receiver with and
// without GSO/GRO at unlimited rate.
func BenchmarkUDPPlainVsFastPath(b *testing.B) {
	ours, _ := startServer(b, nil)
	p := pair{label: "plain"}
	for i := 0; i < b.N; i++ {
		o, loss := ourClient(b, ours, Config{UDP: true, Bitrate: Unlimited, BlockLen: 1400})
		t, _ := ourClient(b, ours, Config{UDP: true, Bitrate: Unlimited, BlockLen: 1400, DisableFastPath: true})
		p.ours += o
		p.theirs += t
		p.loss += loss
	}
	p.report(b)
}
