package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// Each runner runs the comparison that docs/benchmarks.md's section
// describes, with its script or benchmark as it is, and parses its rounds.

func (e *env) roundsVar() string { return "ROUNDS=" + strconv.Itoa(e.rounds) }

// noRounds is the error of a run that printed no round with both tools.
func noRounds(err error) error {
	if err != nil {
		return err
	}
	return errors.New("anchors: no round with both tools in the output")
}

func runIperf3Client(ctx context.Context, e *env) (*outcome, error) {
	np3, err := e.iperf3Pair(ctx)
	if err != nil {
		return nil, err
	}
	out, cmd, err := e.run(ctx, []string{e.roundsVar(), "NP3=" + np3},
		"scripts/bench/client-variants.sh", "ours="+np3, "--", "-l", "128K")
	o := &outcome{commands: []string{cmd}, rounds: parseVariants(out, 2, 0)}
	if len(o.rounds) == 0 {
		return nil, noRounds(err)
	}
	return o, nil
}

func runIperf3Server(ctx context.Context, e *env) (*outcome, error) {
	np3, err := e.iperf3Pair(ctx)
	if err != nil {
		return nil, err
	}
	out, cmd, err := e.run(ctx, []string{e.roundsVar(), "NP3=" + np3},
		"scripts/bench/server-variants.sh", "ours="+np3, "--")
	o := &outcome{commands: []string{cmd}, rounds: parseVariants(out, 3, 0)}
	if len(o.rounds) == 0 {
		return nil, noRounds(err)
	}
	return o, nil
}

func runIperf3UDP(ctx context.Context, e *env) (*outcome, error) {
	np3, err := e.iperf3Pair(ctx)
	if err != nil {
		return nil, err
	}
	out, cmd, err := e.run(ctx, []string{e.roundsVar(), "NP3=" + np3}, "scripts/bench/udp-unlimited.sh")
	o := &outcome{commands: []string{cmd}, rounds: parseUDP(out)}
	if len(o.rounds) == 0 {
		return nil, noRounds(err)
	}
	return o, nil
}

// iperf3Pair checks for iperf3 3.21 and builds examples/iperf3.
func (e *env) iperf3Pair(ctx context.Context) (string, error) {
	if _, err := iperf321(); err != nil {
		return "", err
	}
	return e.build(ctx, "", "./examples/iperf3")
}

func runSockperfClient(ctx context.Context, e *env) (*outcome, error) {
	if _, err := needBinary("sockperf"); err != nil {
		return nil, err
	}
	o := &outcome{}
	var errs []error
	for _, proto := range []string{"udp", "tcp"} {
		out, cmd, err := e.run(ctx, nil, "go", "test", "-run", "^$", "-bench", "SockperfComparison/"+proto+"-default$",
			"-benchtime", strconv.Itoa(e.rounds)+"x", "-v", "./latency")
		o.commands = append(o.commands, cmd)
		o.rounds = parseSockperfClient(o.rounds, out, proto)
		errs = append(errs, err)
	}
	if len(o.rounds) == 0 {
		return nil, noRounds(errors.Join(errs...))
	}
	return o, nil
}

// openLoopScript runs scripts/bench/openloop-alternate.sh with vars, the
// plain reference being ../shared/reference/plain-openloop.py when it is
// there (issue 40: it is the yardstick; redis-openloop.py is its copy).
func (e *env) openLoopScript(ctx context.Context, vars ...string) (string, string, error) {
	for _, bin := range []string{"redis-server", "redis-cli", "sockperf"} {
		if _, err := needBinary(bin); err != nil {
			return "", "", err
		}
	}
	ref := filepath.Join(e.root, "../shared/reference/plain-openloop.py")
	if _, err := os.Stat(ref); err == nil {
		vars = append(vars, "PLAIN=../shared/reference/plain-openloop.py")
	}
	return e.run(ctx, append([]string{e.roundsVar()}, vars...), "scripts/bench/openloop-alternate.sh")
}

func runOpenLoop(ctx context.Context, e *env, rate int) (*outcome, error) {
	r := strconv.Itoa(rate)
	out, cmd, err := e.openLoopScript(ctx, "SECS="+e.secs(5, 1), "ONLY=cache", "RATES="+r, "KERNEL=1")
	if cmd == "" {
		return nil, err
	}
	o := &outcome{commands: []string{cmd}, rounds: parseOpenLoop(out, r)}
	if len(o.rounds) == 0 {
		return nil, noRounds(err)
	}
	return o, nil
}

func runUnderLoad(ctx context.Context, e *env) (*outcome, error) {
	out, cmd, err := e.openLoopScript(ctx, "SECS="+e.secs(3, 1), "ONLY=underload")
	if cmd == "" {
		return nil, err
	}
	o := &outcome{commands: []string{cmd}, rounds: parseUnderLoad(out)}
	if len(o.rounds) == 0 {
		return nil, noRounds(err)
	}
	return o, nil
}

func runSockperfServer(ctx context.Context, e *env) (*outcome, error) {
	if _, err := needBinary("sockperf"); err != nil {
		return nil, err
	}
	pp, err := e.build(ctx, "", "./examples/pingpong")
	if err != nil {
		return nil, err
	}
	out, cmd, err := e.run(ctx, []string{e.roundsVar(), "MPS=0", "SECONDS_=" + e.secs(3, 1), "PINGPONG=" + pp},
		"scripts/bench/sockperf-server.sh")
	o := &outcome{commands: []string{cmd}, rounds: parseSockperfServer(out)}
	if len(o.rounds) == 0 {
		return nil, noRounds(err)
	}
	return o, nil
}

func runGoRedis(ctx context.Context, e *env) (*outcome, error) {
	for _, bin := range []string{"redis-server", "redis-cli"} {
		if _, err := needBinary(bin); err != nil {
			return nil, err
		}
	}
	cb, err := e.build(ctx, "", "./examples/cachebench")
	if err != nil {
		return nil, err
	}
	gr, err := e.build(ctx, "scripts/bench/goredis", ".")
	if err != nil {
		return nil, skip("go-redis did not build (its module, scripts/bench/goredis, needs github.com/redis/go-redis/v9 from the module proxy): %v", err)
	}
	out, cmd, err := e.run(ctx, []string{e.roundsVar(), "SECONDS_=" + e.secs(2, 1), "CACHEBENCH=" + cb, "GOREDIS=" + gr},
		"scripts/bench/goredis.sh")
	o := &outcome{commands: []string{cmd}, rounds: parseGoRedis(out)}
	if len(o.rounds) == 0 {
		return nil, noRounds(err)
	}
	return o, nil
}

// vsRedisBenchmark runs one scenario of cache/glide's
// BenchmarkVsRedisBenchmark once per pass: the redis-benchmark anchors and
// glide's read the same run.
func (e *env) vsRedisBenchmark(ctx context.Context, scenario string) (*sharedRun, error) {
	if _, err := needBinary("valkey-benchmark", "redis-benchmark"); err != nil {
		return nil, err
	}
	if _, err := needBinary("valkey-server", "redis-server"); err != nil {
		return nil, err
	}
	vars := []string{"NETPERFKIT_BENCH_SECONDS=" + e.secs(2, 1), "NETPERFKIT_BENCH_ROUNDS=" + strconv.Itoa(e.rounds)}
	r := e.runShared(ctx, "vsrb/"+scenario, vars, "go", "test", "-run", "^$",
		"-bench", "VsRedisBenchmark/"+scenario+"$", "-benchtime", "1x", "-v", "./cache/glide")
	return r, nil
}

func runRedisBenchmark(ctx context.Context, e *env, scenario string) (*outcome, error) {
	r, err := e.vsRedisBenchmark(ctx, scenario)
	if err != nil {
		return nil, err
	}
	rb, resp, glide, ok := parseVsRedisBenchmark(r.out)
	if !ok {
		return nil, noRounds(r.err)
	}
	o := &outcome{commands: []string{r.cmd}, load: r.load}
	for i := range rb {
		rd := newRound()
		rd.Figures["redis_benchmark_ops"], rd.Figures["resp_ops"] = rb[i], resp[i]
		if i < len(glide) {
			rd.Figures["glide_ops"] = glide[i]
		}
		putRatio(&rd, "ops", resp[i], rb[i])
		o.rounds = append(o.rounds, rd)
	}
	return o, nil
}

// runConnectAlternate runs connect-per-op as a user runs the pair by hand:
// the cachebench binary against redis-benchmark -k 0 on one redis-server
// (scripts/bench/connect-alternate.sh).
func runConnectAlternate(ctx context.Context, e *env) (*outcome, error) {
	for _, bin := range []string{"redis-server", "redis-cli", "redis-benchmark"} {
		if _, err := needBinary(bin); err != nil {
			return nil, err
		}
	}
	out, cmd, err := e.run(ctx, []string{e.roundsVar(), "SECS=" + e.secs(3, 1)}, "scripts/bench/connect-alternate.sh")
	o := &outcome{commands: []string{cmd}, rounds: parseConnectAlternate(out)}
	if len(o.rounds) == 0 {
		return nil, noRounds(err)
	}
	return o, nil
}

// runGlide reads the three scenarios' runs: the resp engine's ops/s over
// glide's, round by round (glide's runs follow the rounds, paired by index).
func runGlide(ctx context.Context, e *env) (*outcome, error) {
	o := &outcome{}
	for _, sc := range []string{"pool-plain", "connect-plain", "connect-tls"} {
		r, err := e.vsRedisBenchmark(ctx, sc)
		if err != nil {
			return nil, err
		}
		_, resp, glide, ok := parseVsRedisBenchmark(r.out)
		if !ok {
			return nil, fmt.Errorf("anchors: %s: %w", sc, noRounds(r.err))
		}
		o.commands = append(o.commands, r.cmd)
		if o.load == nil {
			o.load = r.load
		}
		for i := range min(len(resp), len(glide)) {
			for len(o.rounds) <= i {
				o.rounds = append(o.rounds, newRound())
			}
			o.rounds[i].Figures[sc+"_resp_ops"], o.rounds[i].Figures[sc+"_glide_ops"] = resp[i], glide[i]
			putRatio(&o.rounds[i], sc, resp[i], glide[i])
		}
	}
	return o, nil
}

func runNodeExporter(ctx context.Context, e *env) (*outcome, error) {
	ne, err := needBinary("prometheus-node-exporter", "node_exporter")
	if err != nil {
		return nil, err
	}
	agent, err := e.build(ctx, "", "./examples/agent")
	if err != nil {
		return nil, err
	}
	n, roundsVar := "1000", e.roundsVar()
	if e.short || e.agreeOnly {
		n = "100"
	}
	if e.agreeOnly { // the names are read once, before the rounds
		roundsVar = "ROUNDS=1"
	}
	out, cmd, err := e.run(ctx, []string{roundsVar, "N=" + n, "AGENT=" + agent, "NODE_EXPORTER=" + ne},
		"scripts/bench/node-exporter.sh")
	rounds, ag := parseNodeExporter(out)
	if len(rounds) == 0 && ag == nil {
		return nil, noRounds(err)
	}
	return &outcome{commands: []string{cmd}, rounds: rounds, agreement: ag}, nil
}
