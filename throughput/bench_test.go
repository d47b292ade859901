package throughput

import (
	"encoding/json"
	"net"
	"os"
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
func iperf3Client(b *testing.B, bin, addr string, args ...string) (bps, lossPct float64) {
	b.Helper()
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

// benchPeers lists the iperf3 builds the comparisons run against, by
// name: the Debian one ("iperf3-debian") and, when NETPERFKIT_IPERF3 names
// another build, that one ("iperf3-env").
func benchPeers(b *testing.B) []struct{ name, bin string } {
	b.Helper()
	peers := []struct{ name, bin string }{{"iperf3-debian", peertest.Binary(b, "apt-get install iperf3", "iperf3")}}
	if p := os.Getenv(peertest.NewIPerf3Env); p != "" {
		peers = append(peers, struct{ name, bin string }{"iperf3-env", peertest.NewIPerf3(b)})
	}
	return peers
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
// against one stock iperf3 server (of the same build): at iperf3's block
// length (128 KiB) and with our default (1 MiB), for 1 and 4 streams,
// through the poller and on stream threads (Config.StreamThreads).
func BenchmarkTCPClientVsIperf3(b *testing.B) {
	for _, peer := range benchPeers(b) {
		addr := startIperf3ServerBin(b, peer.bin)
		for _, streams := range []int{1, 4} {
			for _, blk := range []int{iperfTCPBlockLen, 0} {
				for _, threads := range []bool{false, true} {
					name := peer.name + "/P" + strconv.Itoa(streams) + "-len128K"
					if blk == 0 {
						name = peer.name + "/P" + strconv.Itoa(streams) + "-ourdefaults"
					}
					if threads {
						name += "-threads"
					}
					b.Run(name, func(b *testing.B) {
						var p pair
						for i := 0; i < b.N; i++ {
							o, _ := ourClient(b, addr, Config{Streams: streams, BlockLen: blk, SocketOptions: SocketOptions{StreamThreads: threads}})
							t, _ := iperf3Client(b, peer.bin, addr, "-P", strconv.Itoa(streams), "-l", "128K")
							p.ours += o
							p.theirs += t
						}
						p.report(b)
					})
				}
			}
		}
	}
}

// BenchmarkServerVsIperf3Server runs the stock iperf3 client against our
// server and against iperf3's own (of the same build), alternating; ours
// through the poller and on stream threads (ServerConfig.StreamThreads).
func BenchmarkServerVsIperf3Server(b *testing.B) {
	poller, _ := startServer(b, nil)
	threaded, _ := startServer(b, &ServerConfig{SocketOptions: SocketOptions{StreamThreads: true}})
	for _, peer := range benchPeers(b) {
		theirs := startIperf3ServerBin(b, peer.bin)
		for _, streams := range []int{1, 4} {
			for _, ours := range []string{poller, threaded} {
				name := peer.name + "/P" + strconv.Itoa(streams)
				if ours == threaded {
					name += "-threads"
				}
				b.Run(name, func(b *testing.B) {
					var p pair
					for i := 0; i < b.N; i++ {
						o, _ := iperf3Client(b, peer.bin, ours, "-P", strconv.Itoa(streams))
						t, _ := iperf3Client(b, peer.bin, theirs, "-P", strconv.Itoa(streams))
						p.ours += o
						p.theirs += t
					}
					p.report(b)
				})
			}
		}
	}
}

// BenchmarkUDPUnlimitedVsIperf3 sends 1400-byte datagrams at unlimited
// rate, each tool against its own server, and compares received goodput.
// A peer that knows --gsro (3.21+) uses it.
func BenchmarkUDPUnlimitedVsIperf3(b *testing.B) {
	ours, _ := startServer(b, nil)
	for _, peer := range benchPeers(b) {
		theirs := startIperf3ServerBin(b, peer.bin)
		args := []string{"-u", "-b", "0", "-l", "1400"}
		if peer.name != "iperf3-debian" {
			args = append(args, "--gsro")
		}
		b.Run(peer.name, func(b *testing.B) {
			var p pair
			for i := 0; i < b.N; i++ {
				o, loss := ourClient(b, ours, Config{UDP: true, Bitrate: Unlimited, BlockLen: 1400})
				t, _ := iperf3Client(b, peer.bin, theirs, args...)
				p.ours += o
				p.theirs += t
				p.loss += loss
			}
			p.report(b)
		})
	}
}

// BenchmarkUDPLossVsIperf3 sends 1400-byte datagrams at 1 and 5 Gbit/s to
// a stock server, our client and iperf3's alternating, and reports both
// losses (the ratio metric is theirs' goodput over ours' there).
func BenchmarkUDPLossVsIperf3(b *testing.B) {
	for _, peer := range benchPeers(b) {
		addr := startIperf3ServerBin(b, peer.bin)
		for _, rate := range []string{"1G", "5G"} {
			b.Run(peer.name+"/"+rate, func(b *testing.B) {
				bits := 1e9
				if rate == "5G" {
					bits = 5e9
				}
				var p pair
				var theirLoss float64
				for i := 0; i < b.N; i++ {
					o, loss := ourClient(b, addr, Config{UDP: true, Bitrate: bits, BlockLen: 1400})
					t, tl := iperf3Client(b, peer.bin, addr, "-u", "-b", rate, "-l", "1400")
					p.ours += o
					p.theirs += t
					p.loss += loss
					theirLoss += tl
				}
				p.report(b)
				b.ReportMetric(theirLoss/float64(b.N), "theirs-lost-%")
			})
		}
	}
}

// BenchmarkUDPPlainVsFastPath compares our UDP sender and receiver with and
// without GSO/GRO at unlimited rate.
func BenchmarkUDPPlainVsFastPath(b *testing.B) {
	ours, _ := startServer(b, nil)
	p := pair{label: "plain"}
	for i := 0; i < b.N; i++ {
		o, loss := ourClient(b, ours, Config{UDP: true, Bitrate: Unlimited, BlockLen: 1400})
		t, _ := ourClient(b, ours, Config{UDP: true, Bitrate: Unlimited, BlockLen: 1400, SocketOptions: SocketOptions{DisableFastPath: true}})
		p.ours += o
		p.theirs += t
		p.loss += loss
	}
	p.report(b)
}
