package main

import (
	"bufio"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Parsers of the comparisons' own output: each reads the per-round lines
// that scripts/bench's drivers and the benchmarks print, never their
// summaries, so that the medians here are over the same rounds.

// numbers parses every field of f as a float, or reports false.
func numbers(f []string) ([]float64, bool) {
	out := make([]float64, len(f))
	for i, s := range f {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, false
		}
		out[i] = v
	}
	return out, true
}

// roundRows reads lines of "ROUND KEY... NUMBER..." with nkeys words after
// the round and nnum numbers after them; lines of another shape (comments,
// "failed" runs, summaries) are left out. It returns round -> key -> numbers.
func roundRows(out string, nkeys, nnum int) map[int]map[string][]float64 {
	rows := map[int]map[string][]float64{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 1+nkeys+nnum {
			continue
		}
		r, err := strconv.Atoi(f[0])
		if err != nil {
			continue
		}
		v, ok := numbers(f[1+nkeys:])
		if !ok {
			continue
		}
		if rows[r] == nil {
			rows[r] = map[string][]float64{}
		}
		rows[r][strings.Join(f[1:1+nkeys], " ")] = v
	}
	return rows
}

// sortedRounds returns the keys of rows in order.
func sortedRounds[T any](rows map[int]T) []int {
	var rs []int
	for r := range rows {
		rs = append(rs, r)
	}
	sort.Ints(rs)
	return rs
}

// ratio is a/b, or false unless both are finite and positive (a 0 is a
// figure the run did not measure, such as CPU below one clock tick).
func ratio(a, b float64) (float64, bool) {
	ok := func(x float64) bool { return x > 0 && !math.IsInf(x, 0) }
	if !ok(a) || !ok(b) || !ok(a/b) {
		return 0, false
	}
	return a / b, true
}

// putRatio sets r.Ratios[key] = a/b when it is defined.
func putRatio(r *Round, key string, a, b float64) {
	if x, ok := ratio(a, b); ok {
		r.Ratios[key] = x
	}
}

func newRound() Round { return Round{Figures: map[string]float64{}, Ratios: map[string]float64{}} }

// pairedRounds gives, in round order, fill's Round for each round of rows
// that has both ours's and ref's numbers (a and b), with the round's whole
// row for a third tool's; a round that lacks either is left out.
func pairedRounds(rows map[int]map[string][]float64, ours, ref string,
	fill func(a, b []float64, row map[string][]float64) Round) []Round {
	var rounds []Round
	for _, n := range sortedRounds(rows) {
		a, b := rows[n][ours], rows[n][ref]
		if a == nil || b == nil {
			continue
		}
		rounds = append(rounds, fill(a, b, rows[n]))
	}
	return rounds
}

// parseVariants reads client-variants.sh and server-variants.sh: "R NAME
// GBIT/S CPU% [CPU%]" per run; cpuCol picks the CPU column (0: the first).
func parseVariants(out string, nnum, cpuCol int) []Round {
	return pairedRounds(roundRows(out, 1, nnum), "ours", "stock", func(ours, stock []float64, _ map[string][]float64) Round {
		rd := newRound()
		rd.Figures["ours_gbps"], rd.Figures["stock_gbps"] = ours[0], stock[0]
		rd.Figures["ours_cpu_pct"], rd.Figures["stock_cpu_pct"] = ours[1+cpuCol], stock[1+cpuCol]
		putRatio(&rd, "goodput", ours[0], stock[0])
		if a, ok := ratio(ours[1+cpuCol], ours[0]); ok {
			if b, ok := ratio(stock[1+cpuCol], stock[0]); ok {
				putRatio(&rd, "cpu_per_byte", a, b)
			}
		}
		return rd
	})
}

var udpLine = regexp.MustCompile(`^round (\d+) (\S+)\s+sent ([\d.]+) Gbit/s, loss ([\d.]+)%, goodput ([\d.]+) Gbit/s, cpu client ([\d.]+)% server ([\d.]+)%`)

// parseUDP reads udp-unlimited.sh's "round R TOOL sent ..." lines.
func parseUDP(out string) []Round {
	rows := map[int]map[string][]float64{}
	for _, line := range strings.Split(out, "\n") {
		m := udpLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		r, _ := strconv.Atoi(m[1])
		v, ok := numbers(m[3:])
		if !ok {
			continue
		}
		if rows[r] == nil {
			rows[r] = map[string][]float64{}
		}
		rows[r][m[2]] = v // sent, loss, goodput, client CPU, server CPU
	}
	return pairedRounds(rows, "ours", "3.21", func(ours, ref []float64, _ map[string][]float64) Round {
		rd := newRound()
		for name, v := range map[string][]float64{"ours": ours, "iperf3": ref} {
			rd.Figures[name+"_goodput_gbps"], rd.Figures[name+"_loss_pct"] = v[2], v[1]
			rd.Figures[name+"_server_cpu_pct"] = v[4]
		}
		putRatio(&rd, "goodput", ours[2], ref[2])
		putRatio(&rd, "server_cpu", ours[4], ref[4])
		return rd
	})
}

// pairRows reads "R TOOL P50 P99 [more...]" lines (openloop-alternate.sh)
// of the named tools, by round.
func pairRows(out string, tools ...string) map[int]map[string][]float64 {
	rows := map[int]map[string][]float64{}
	for n := 2; n <= 7; n++ { // cachebench prints 7 numbers, pingpong 4 or 5, the references 2
		for r, m := range roundRows(out, 1, n) {
			for k, v := range m {
				if !slices.Contains(tools, k) {
					continue
				}
				if rows[r] == nil {
					rows[r] = map[string][]float64{}
				}
				rows[r][k] = v
			}
		}
	}
	return rows
}

// parsePair reads the lines of our tool and the reference (pairRows), and
// gives p50 and p99 ratios.
func parsePair(out, ours, ref string) []Round {
	return pairedRounds(pairRows(out, ours, ref), ours, ref, func(a, b []float64, _ map[string][]float64) Round {
		return pairRound(a, b)
	})
}

func pairRound(a, b []float64) Round {
	rd := newRound()
	rd.Figures["ours_p50_us"], rd.Figures["ours_p99_us"] = a[0], a[1]
	rd.Figures["ref_p50_us"], rd.Figures["ref_p99_us"] = b[0], b[1]
	putRatio(&rd, "p50", a[0], b[0])
	putRatio(&rd, "p99", a[1], b[1])
	return rd
}

// parseUnderLoad reads openloop-alternate.sh's under-load pair: pingpong's
// p50 and p99 over sockperf's, with pingpong's CPU (percent of a core, its
// fifth number) kept as a figure.
func parseUnderLoad(out string) []Round {
	ours, ref := "pingpong-ul1000", "sockperf-ul1000"
	return pairedRounds(pairRows(out, ours, ref), ours, ref, func(a, b []float64, _ map[string][]float64) Round {
		rd := pairRound(a, b)
		if len(a) >= 5 {
			rd.Figures["ours_cpu_pct"] = a[4]
		}
		return rd
	})
}

// parseOpenLoop reads openloop-alternate.sh's cachebench runs at rate r in
// the default mode (with the kernel view, "cachebench-R-kernel") and with
// -kernel=false ("cachebench-R") and the plain client's ("plain-R"): the
// default against the plain client (its p99 also as service time, timed
// from the actual send as the plain client times), and what the kernel
// view costs the application view (default over -kernel=false, p50).
func parseOpenLoop(out, r string) []Round {
	def, off, ref := "cachebench-"+r+"-kernel", "cachebench-"+r, "plain-"+r
	return pairedRounds(pairRows(out, def, off, ref), def, ref, func(a, b []float64, row map[string][]float64) Round {
		rd := pairRound(a, b)
		// The service time's p99 (from each request's actual send, its
		// seventh number) is the plain client's own measure: its p99
		// leaves out the requests that queued behind a stall.
		if len(a) >= 7 && a[6] > 0 {
			rd.Figures["ours_service_p99_us"] = a[6]
			putRatio(&rd, "service_p99", a[6], b[1])
		}
		if c := row[off]; c != nil {
			rd.Figures["kernel_off_p50_us"] = c[0]
			putRatio(&rd, "kernel_cost_p50", a[0], c[0])
		}
		return rd
	})
}

var sockperfRound = regexp.MustCompile(`round (\d+): ours p50 ([\d.]+) us, sockperf p50 ([\d.]+) us`)

// parseSockperfClient reads BenchmarkSockperfComparison's round logs into
// rounds (by index), under the protocol's keys.
func parseSockperfClient(rounds []Round, out, proto string) []Round {
	i := 0
	for _, m := range sockperfRound.FindAllStringSubmatch(out, -1) {
		v, ok := numbers(m[2:])
		if !ok {
			continue
		}
		for len(rounds) <= i {
			rounds = append(rounds, newRound())
		}
		rounds[i].Figures[proto+"_ours_p50_us"], rounds[i].Figures[proto+"_sockperf_p50_us"] = v[0], v[1]
		putRatio(&rounds[i], proto+"_p50", v[0], v[1])
		i++
	}
	return rounds
}

// parseSockperfServer reads sockperf-server.sh's "R MODE PROTO NAME P50 P99
// SENT CPU_US" lines: p50 and server CPU per message, per protocol.
func parseSockperfServer(out string) []Round {
	rows := roundRows(out, 3, 4)
	var rounds []Round
	for _, r := range sortedRounds(rows) {
		rd := newRound()
		for _, proto := range []string{"udp", "tcp"} {
			a, b := rows[r]["ping-pong "+proto+" ours"], rows[r]["ping-pong "+proto+" sockperf"]
			if a == nil || b == nil {
				continue
			}
			rd.Figures[proto+"_ours_p50_us"], rd.Figures[proto+"_sockperf_p50_us"] = a[0], b[0]
			rd.Figures[proto+"_ours_cpu_us"], rd.Figures[proto+"_sockperf_cpu_us"] = a[3], b[3]
			putRatio(&rd, proto+"_p50", a[0], b[0])
			if x, ok := ratio(a[3], a[2]); ok {
				if y, ok := ratio(b[3], b[2]); ok {
					putRatio(&rd, proto+"_cpu_per_msg", x, y)
				}
			}
		}
		if len(rd.Figures) > 0 {
			rounds = append(rounds, rd)
		}
	}
	return rounds
}

var opsPerRound = regexp.MustCompile(`ops/s per round: redis-benchmark \[([\d. ]*)\], resp \[([\d. ]*)\], glide \[([\d. ]*)\]`)

// parseVsRedisBenchmark reads BenchmarkVsRedisBenchmark's per-round log:
// redis-benchmark's, the resp engine's and glide's ops/s, by index.
func parseVsRedisBenchmark(out string) (rb, resp, glide []float64, ok bool) {
	m := opsPerRound.FindStringSubmatch(out)
	if m == nil {
		return nil, nil, nil, false
	}
	rb, ok1 := numbers(strings.Fields(m[1]))
	resp, ok2 := numbers(strings.Fields(m[2]))
	glide, ok3 := numbers(strings.Fields(m[3]))
	if !ok1 || !ok2 || !ok3 || len(rb) == 0 || len(rb) != len(resp) {
		return nil, nil, nil, false
	}
	return rb, resp, glide, true
}

// parseConnectAlternate reads connect-alternate.sh's "R TOOL OPS TW-BEFORE
// TW-AFTER" lines: cachebench's ops/s over redis-benchmark's, with each
// run's TIME_WAIT count before it kept as a figure.
func parseConnectAlternate(out string) []Round {
	return pairedRounds(roundRows(out, 1, 3), "cachebench", "redis-benchmark", func(a, b []float64, _ map[string][]float64) Round {
		rd := newRound()
		rd.Figures["cachebench_ops"], rd.Figures["redis_benchmark_ops"] = a[0], b[0]
		rd.Figures["cachebench_timewait_before"], rd.Figures["redis_benchmark_timewait_before"] = a[1], b[1]
		putRatio(&rd, "ops", a[0], b[0])
		return rd
	})
}

// parseGoRedis reads goredis.sh's "R WORKERS TOOL OPS P50 P99 CPU_S" lines.
func parseGoRedis(out string) []Round {
	rows := roundRows(out, 2, 4)
	var rounds []Round
	for _, r := range sortedRounds(rows) {
		rd := newRound()
		for _, w := range []string{"1", "4"} {
			a, b := rows[r][w+" resp"], rows[r][w+" go-redis"]
			if a == nil || b == nil {
				continue
			}
			rd.Figures["resp_ops_w"+w], rd.Figures["goredis_ops_w"+w] = a[0], b[0]
			rd.Figures["resp_p50_us_w"+w], rd.Figures["goredis_p50_us_w"+w] = a[1], b[1]
			putRatio(&rd, "p50_w"+w, a[1], b[1])
			putRatio(&rd, "ops_w"+w, a[0], b[0])
			if x, ok := ratio(a[3], a[0]); ok {
				if y, ok := ratio(b[3], b[0]); ok {
					putRatio(&rd, "cpu_per_op_w"+w, x, y)
				}
			}
		}
		if len(rd.Figures) > 0 {
			rounds = append(rounds, rd)
		}
	}
	return rounds
}

var vethBench = regexp.MustCompile(`(?m)^BenchmarkVethSnapshot/(ioctl|ethtool-binary)(?:-\d+)?\s+\d+\s+([\d.]+) ns/op`)

// parseEthtoolBench pairs BenchmarkVethSnapshot's ioctl and ethtool-binary
// runs by their order (-count N gives N of each): ethtool's ns/op over ours.
func parseEthtoolBench(out string) []Round {
	var ioctl, binary []float64
	for _, m := range vethBench.FindAllStringSubmatch(out, -1) {
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			continue
		}
		if m[1] == "ioctl" {
			ioctl = append(ioctl, v)
		} else {
			binary = append(binary, v)
		}
	}
	var rounds []Round
	for i := range min(len(ioctl), len(binary)) {
		rd := newRound()
		rd.Figures["ioctl_ns"], rd.Figures["ethtool_binary_ns"] = ioctl[i], binary[i]
		putRatio(&rd, "speed", binary[i], ioctl[i])
		rounds = append(rounds, rd)
	}
	return rounds
}

// parseNodeExporter reads node-exporter.sh: the name agreement lines ("#
// names ...", "# only ...") and the "R NAME P50 P99 CPU_US" rounds.
func parseNodeExporter(out string) ([]Round, *Agreement) {
	var ag *Agreement
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 8 && f[0] == "#" && f[1] == "names" {
			v, ok := numbers([]string{f[3], f[5], f[7]})
			if ok {
				ag = &Agreement{What: "node_ethtool_ series (names and labels)",
					Compared: int(max(v[0], v[1])), Agree: int(v[2])}
			}
		}
		if ag != nil && len(f) == 4 && f[0] == "#" && f[1] == "only" && len(ag.Detail) < 10 {
			ag.Detail = append(ag.Detail, "only "+f[2]+": "+f[3])
		}
	}
	rounds := pairedRounds(roundRows(out, 1, 3), "agent", "node_exporter", func(a, b []float64, _ map[string][]float64) Round {
		rd := newRound()
		rd.Figures["agent_p50_us"], rd.Figures["node_exporter_p50_us"] = a[0], b[0]
		rd.Figures["agent_cpu_us"], rd.Figures["node_exporter_cpu_us"] = a[2], b[2]
		putRatio(&rd, "latency_p50", a[0], b[0])
		putRatio(&rd, "cpu_per_scrape", a[2], b[2])
		return rd
	})
	return rounds, ag
}
