// Package throughput generates TCP and UDP flows and measures them, and speaks
// iperf3's control protocol as a client and as a server, so a Go program can
// test against a stock iperf3 server and stock iperf3 clients can test
// against a Go server.
//
// Entry points:
//
//   - Run runs one test against an iperf3-compatible server and returns its
//     Result; Config (nil for defaults) says what to run.
//   - Result.Total reads the whole test whichever way the data flowed;
//     Result.Upload and Result.Download hold each direction, Result.Intervals
//     the interval reports that Config.OnInterval also receives live.
//   - NewServer, then Server.Serve(ctx, listener) or
//     Server.ListenAndServe(ctx, network, address), serves stock iperf3
//     clients and Run; ServerConfig sets its limits and hooks.
//
// Beside it: throughput/throughputtest starts in-process servers for tests
// and benchmarks, throughput/iperf3fmt writes a Result as iperf3 3.21's
// text, -J and live report, and throughput/underload runs latency probes
// beside the flows (RTT under load, responsiveness).
//
// The package's one third-party dependency is golang.org/x/sys (socket
// options, TCP_INFO, UDP GSO/GRO); what it may import of netperfkit is in
// internal/depcheck's table, and where it sits in docs/architecture.md
// (Config, Result and the types they hold live in an internal package and
// are aliased here; iperf3's wire format is internal and not part of the
// API). The conventions it shares with every netperfkit package (context
// first and partial results on cancel, callbacks as config fields,
// time.Duration in Go, one server shape, errors naming the field) are in
// docs/conventions.md.
//
// # Defaults
//
// A test runs one TCP stream for 10 s, client sending, in 1 MiB writes (iperf3
// writes 128 KiB; larger writes cost fewer system calls) read back 128 KiB at
// a time; UDP sends 1460-byte datagrams at 1 Mbit/s (1024*1024 bit/s) per
// stream, as iperf3 does. Reports come every second. Connecting and every
// control step time out after 10 s. A server runs 4 tests at once, each at
// most 1 hour and 128 streams, and gives each handshake step 10 s.
//
// # UDP pacing
//
// A UDP sender with a target rate never puts more than 50 us of the rate on
// the wire at once: a GSO write carries at most that much (4 datagrams of
// 1400 bytes at 1 Gbit/s, 22 at 5 Gbit/s), the pacer sleeps precisely to
// each write's slot, and a late sender sends at most 32 KiB at once (128
// KiB below 100 Mbit/s) before catching up at twice the rate, forgiving
// debt past 5 ms (256 KiB at slow rates). Every datagram carries the time
// of the write that sent it, and paced tests receive without GRO unless
// Config.GRO asks for it, with the kernel's arrival time of each datagram
// (SO_TIMESTAMPNS), so jitter is measured per datagram as iperf3 measures
// it, without our receiver's wake-up in it. Config.JitterRead (and
// ServerConfig.JitterRead) takes the time each read returned
// instead, as iperf3's receiver does, to compare with figures iperf3
// measured: it adds the receiver's wake-ups. Unlimited tests keep 64 KiB GSO
// writes and GRO. Config.Burst (iperf3's "-b rate/burst") sends that many
// datagrams or writes back to back per pacing slot instead.
//
// # StreamThreads
//
// Config.StreamThreads (ServerConfig.StreamThreads for a server's tests) gives
// each TCP stream of a side its own OS thread, as iperf3 3.21's stream
// threads: it reads or writes a blocking duplicate of the socket with raw
// system calls, so the kernel wakes that thread and no other, and the
// thread keeps its P while it sleeps. The thread takes the socket out of
// the Go poller (the stream's original net.Conn is closed; the connection
// stays open), so that data and buffer space wake that thread and not the
// poller too. To keep as many Ps for Go code, the package raises
// GOMAXPROCS by one for each such thread while it runs (at most 32 in a
// process; later streams use the poller) and puts it back when the last
// one ends. This is the one place the package changes GOMAXPROCS; a
// program that sets GOMAXPROCS itself while tests run should leave
// StreamThreads off. A raw sleep does not answer the runtime's stop
// requests by itself, so each read or write wakes on a signal or after
// 50 ms and yields before it goes on. ZeroCopy senders call sendfile on
// their thread. Off by default in the library; on in examples/iperf3. With
// 4 streams on 2 shared cores, a stock 3.21 client gets 1.09-1.14x its own
// server's goodput from ours with threads, at 0.70-0.81x its CPU per byte
// (0.85x without), and our client sends 1.00x what 3.21's does (0.80x
// without); see docs/benchmarks.md.
//
// # IPv6 flow label
//
// Config.FlowLabel (iperf3 -L) labels the client's data sockets on linux:
// each leases the label for the server's address (IPV6_FLOWLABEL_MGR,
// shareable by any socket of the host), turns on IPV6_FLOWINFO_SEND and
// connects with the label in sin6_flowinfo, so that the SYN and every later
// packet carry it. The net package passes no flow label to connect(2), so a
// TCP stream's dial makes that connect in its Control function (binding
// Config.BindAddr and ClientPort itself first) and the net package then
// waits for the connection it started; a UDP stream connects again once
// dialled. The label goes to the server as 3.21's flowlabel parameter.
// 3.21 labels its client's TCP streams only; this package labels the
// client's UDP streams too and, as a server, the UDP streams of a client
// that sent a label, so that reverse and bidirectional UDP data carries it
// (a label the kernel refuses there leaves a note). Nothing labels a
// server's TCP streams: linux gives an accepted socket the client's label
// only by reflecting it (net.ipv6.flowlabel_reflect), so reverse TCP data
// carries the kernel's label, with 3.21's server as with this one.
//
// # Server affinity
//
// Config.ServerAffinity (iperf3 -A n,m) asks the server to run the test on
// CPU m. A 3.21 server pins its whole process for the test. This package's
// server may run other tests and other work in its process, so it pins the
// test's data path and nothing else: each data stream's goroutine locks
// itself to an OS thread (runtime.LockOSThread) and confines that thread
// to CPU m (sched_setaffinity) for the stream's life. With StreamThreads
// that thread is the stream thread which reads or writes the socket;
// without, it is the thread on which the stream's reads and writes through
// the poller run. When the stream ends the thread gets its CPUs back and
// is unlocked (one whose CPUs cannot be given back ends with its
// goroutine). Not pinned: the control connection, the interval reporter,
// the receive-idle watch, the runtime's own threads (poller, garbage
// collector) and the kernel's packet processing. A CPU outside the
// server's allowed set (the mask its process runs under: taskset,
// systemd's CPUAffinity=, the cgroup's cpuset) is refused before any
// stream connects with iperf3's IEAFFINITY and EINVAL, which a 3.21 client
// prints as "unable to set CPU affinity: Invalid argument". Elsewhere than
// linux the test runs where the OS puts it, with a note.
//
// # Data from files
//
// By default a sender writes a pattern and a receiver discards what it
// reads. Config.SendFrom gives each sending stream a reader whose bytes it
// sends instead, and Config.ReceiveTo each receiving stream a writer that
// gets every byte it reads, in order (iperf3 -F; ServerConfig.SendFrom and
// ReceiveTo for a server's tests). A client whose data is all sent ends
// the test, as iperf3 does when its -F file is sent. With ZeroCopy, an
// *os.File holding a regular file is sent with sendfile from the file
// itself, on the poller and on stream threads alike. A stream without a
// source or a sink writes and reads as before. TCP only.
//
// # Why a TCP flow fell short
//
// TCPLimits (StreamInterval.Limits, StreamResult.Limits, Summary.Limits)
// is the sender kernel's own account of what held it back: the fractions
// of the time it was busy, stalled on the receiver's window or on its own
// send buffer, and the fraction of its bytes it retransmitted. A count of
// retransmitted segments says little on its own; these say which side to
// look at. A netperfkit peer sends its sender's with its results.
//
// # Where UDP datagrams went
//
// Summary.Ledger (a Ledger) splits a UDP direction's offered datagrams
// into what the sending host refused, its NIC and allowance, the path,
// the receiving host's NIC, allowance, backlog, reassembly and conntrack,
// the receiving socket (SO_MEMINFO drops, exact for the test), late reads,
// and what the application received, each line known with its source or
// unknown with the reason. Each end reads the counters of the network
// namespace its socket lives in (SIOCGSKNS; a socket in another namespace
// than the process needs CAP_SYS_ADMIN to read there, else its host lines
// are unknown), and a netperfkit peer sends its own with its results.
//
// Linux-only measurements (TCP_INFO, UDP GSO/GRO, MSS and congestion
// control) sit behind build tags; elsewhere results carry a "not available
// on this platform" note instead of failing. iperf3's wire format itself is
// in an internal package: it is not part of the API.
package throughput
