package main

import "context"

// metric is one per-round ratio an anchor publishes, ours over theirs.
type metric struct {
	key, label string
	better     string // "higher" or "lower"
}

func higher(key, label string) metric { return metric{key, label, "higher"} }
func lower(key, label string) metric  { return metric{key, label, "lower"} }

// anchor is one comparison docs/benchmarks.md describes.
type anchor struct {
	name, title string
	section     string // the heading's link target in docs/benchmarks.md
	metrics     []metric
	run         func(ctx context.Context, e *env) (*outcome, error)
}

// anchors is every anchor, in the tables' order.
var anchors = []*anchor{
	{name: "iperf3-client", title: "iperf3 3.21 client", section: "iperf3-321-client",
		metrics: []metric{higher("goodput", "goodput"), lower("cpu_per_byte", "client CPU per byte")},
		run:     runIperf3Client},
	{name: "iperf3-server", title: "iperf3 3.21 server", section: "iperf3-321-server",
		metrics: []metric{higher("goodput", "goodput"), lower("cpu_per_byte", "server CPU per byte")},
		run:     runIperf3Server},
	{name: "iperf3-udp", title: "iperf3 3.21, UDP", section: "iperf3-321-udp",
		metrics: []metric{higher("goodput", "goodput"), lower("server_cpu", "server CPU")},
		run:     runIperf3UDP},
	{name: "sockperf-client", title: "sockperf client", section: "sockperf-client",
		metrics: []metric{lower("udp_p50", "UDP ping-pong p50"), lower("tcp_p50", "TCP ping-pong p50")},
		run:     runSockperfClient},
	{name: "sockperf-underload", title: "sockperf under-load", section: "sockperf-under-load",
		metrics: []metric{lower("p50", "p50 at 1000 msg/s"), lower("p99", "p99 at 1000 msg/s")},
		run:     runUnderLoad},
	{name: "sockperf-server", title: "sockperf server", section: "sockperf-server",
		metrics: []metric{lower("udp_p50", "UDP p50"), lower("tcp_p50", "TCP p50"),
			lower("udp_cpu_per_msg", "UDP server CPU per message"), lower("tcp_cpu_per_msg", "TCP server CPU per message")},
		run: runSockperfServer},
	{name: "openloop-1000", title: "plain open-loop client, 1000/s", section: "the-plain-open-loop-client",
		metrics: []metric{lower("p50", "p50"), lower("p99", "p99"), lower("service_p99", "p99 from the actual send"), lower("kernel_cost_p50", "kernel view's cost, p50")},
		run:     func(ctx context.Context, e *env) (*outcome, error) { return runOpenLoop(ctx, e, 1000) }},
	{name: "openloop-5000", title: "plain open-loop client, 5000/s", section: "the-plain-open-loop-client",
		metrics: []metric{lower("p50", "p50"), lower("p99", "p99"), lower("service_p99", "p99 from the actual send"), lower("kernel_cost_p50", "kernel view's cost, p50")},
		run:     func(ctx context.Context, e *env) (*outcome, error) { return runOpenLoop(ctx, e, 5000) }},
	{name: "redis-benchmark-pooled", title: "redis-benchmark, pooled", section: "redis-benchmark",
		metrics: []metric{higher("ops", "ops/s")},
		run:     func(ctx context.Context, e *env) (*outcome, error) { return runRedisBenchmark(ctx, e, "pool-plain") }},
	{name: "redis-benchmark-connect", title: "redis-benchmark, connect-per-op", section: "redis-benchmark",
		metrics: []metric{higher("ops", "ops/s")},
		run:     func(ctx context.Context, e *env) (*outcome, error) { return runRedisBenchmark(ctx, e, "connect-plain") }},
	{name: "redis-benchmark-by-hand", title: "redis-benchmark, connect-per-op by hand", section: "redis-benchmark",
		metrics: []metric{higher("ops", "ops/s")},
		run:     runConnectAlternate},
	{name: "redis-benchmark-tls", title: "redis-benchmark, connect-per-op TLS", section: "redis-benchmark",
		metrics: []metric{higher("ops", "ops/s")},
		run:     func(ctx context.Context, e *env) (*outcome, error) { return runRedisBenchmark(ctx, e, "connect-tls") }},
	{name: "go-redis", title: "go-redis v9.23.0", section: "go-redis",
		metrics: []metric{lower("p50_w1", "p50, 1 connection"), lower("p50_w4", "p50, 4 pooled"),
			higher("ops_w1", "ops/s, 1 connection"), higher("ops_w4", "ops/s, 4 pooled"),
			lower("cpu_per_op_w1", "client CPU per op, 1 connection")},
		run: runGoRedis},
	{name: "glide", title: "valkey-glide", section: "valkey-glide",
		metrics: []metric{higher("pool-plain", "ops/s, pooled"), higher("connect-plain", "ops/s, connect-per-op"),
			higher("connect-tls", "ops/s, connect-per-op TLS")},
		run: runGlide},
	{name: "ethtool", title: "ethtool -S", section: "ethtool--s",
		metrics: []metric{higher("speed", "snapshot speed (ethtool's time over ours)")},
		run:     runEthtool},
	{name: "node-exporter", title: "node_exporter", section: "node_exporter",
		metrics: []metric{lower("latency_p50", "scrape latency p50"), lower("cpu_per_scrape", "CPU per scrape")},
		run:     runNodeExporter},
}

// anchorNamed returns the anchor called name, or nil.
func anchorNamed(name string) *anchor {
	for _, a := range anchors {
		if a.name == name {
			return a
		}
	}
	return nil
}
