// Package benchsuite is a benchmark suite as a user would keep it in their own
// repository: `go test -bench . ./examples/benchsuite` measures RTT, TCP and
// UDP throughput and cache operations against in-process servers (and a local
// redis-server), and reports base units (p50-ns, p99-ns, bits/s, ops/s) that
// benchstat compares across runs:
//
//	go test -run '^$' -bench . -count 6 ./examples/benchsuite > old.txt
//	... change something ...
//	go test -run '^$' -bench . -count 6 ./examples/benchsuite > new.txt
//	benchstat old.txt new.txt
//
// Point the benchmarks at real hosts by replacing the in-process servers with
// addresses of stock `sockperf server`, `iperf3 -s` or a Valkey endpoint.
package benchsuite
