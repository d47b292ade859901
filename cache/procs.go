package cache

import "runtime"

// workersPerProc is how many closed-loop connect-per-operation workers
// one P serves (Procs).
const workersPerProc = 4

// Procs returns the GOMAXPROCS suggested for running w in this process.
// For a closed-loop connect-per-operation run of the built-in RESP engine
// (Engine nil) it is one P per 4 workers, at least 1 and at most the CPUs
// the process may use; for any other run, the current GOMAXPROCS (another
// engine, such as glide's, does its I/O on threads of its own). Run never
// changes GOMAXPROCS: the process is the caller's; examples/cachebench
// (its -procs flag) and examples/report set it from Procs.
//
// Each connect-per-operation request is a socket, a connect, a write, a
// read and a close: the kernel does nearly all of it, and the goroutine
// waits between the calls. With a P per CPU, the runtime wakes an idle
// thread for nearly every goroutine the network readies, and those
// wake-ups take CPU time a server on the same host needs. Over loopback on
// 2 cores, 4 workers on one P made 13,100-14,100 connections a second
// against redis-benchmark -k 0 -c 4's 13,400-14,300 (it runs its clients
// on one thread), and 9,500-12,300 on two Ps (issue 42).
func Procs(w *WorkloadConfig) int {
	cur := runtime.GOMAXPROCS(0)
	if w == nil || w.Mode != ConnectPerOp || w.Rate > 0 || w.Engine != nil {
		return cur
	}
	n := orDefault(w.Workers, defaultWorkers)
	return max(1, min((n+workersPerProc-1)/workersPerProc, runtime.NumCPU()))
}
