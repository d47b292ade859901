// Package pathlab builds a shaped network path for integration tests: two
// network namespaces joined by a veth pair, addressed from 198.18.0.0/15
// (RFC 2544's benchmarking range), with optional tbf or htb rate shaping on
// the egress of either end, all torn down by the test's cleanup.
//
// Loopback neither shapes nor drops, so a number that agrees with iperf3's
// there says little about a real host. On a lab path the sender meets a
// queue that fills, a qdisc that drops and a rate it cannot exceed, and a
// test can check where each byte went (Host.Qdisc, Host.SNMP).
//
// A lab needs linux, root, ip and tc, and the qdisc asked for. Without any
// of them New skips the test with the reason, or fails it when
// NETPERFKIT_REQUIRE_PEERS=1 (internal/peertest).
//
// Programs run inside a namespace with Host.Command (ip netns exec), and Go
// code with Host.Do, whose sockets stay in the namespace after it returns.
// A test across an 800 Mbit/s path (the whole of it is TestLabShapes):
//
//	l := pathlab.New(t, &pathlab.Config{A: &pathlab.Shaper{Rate: 800e6}})
//	srv := l.B.Command(ctx, "iperf3", "-s", "-1", "-p", "5301")
//	require.NoError(t, srv.Start())
//	l.B.WaitListening(t, 5301, 5*time.Second)
//	out := l.A.Run(t, "iperf3", "-c", l.B.Addr.String(), "-p", "5301", "-t", "1", "-J")
//	// ... received within 85-105 % of 800 Mbit/s; l.A.Qdisc(t).Drops,
//	// l.A.SNMP(t)["UdpSndbufErrors"] say what the sender's host dropped.
//
// Go code joins a namespace with Do: a socket made inside it stays there.
//
//	var ln net.Listener
//	err := l.B.Do(func() (err error) { ln, err = net.Listen("tcp", l.B.Addr.String()+":0"); return err })
//
// Every lab test shares the rest of the lab from here, written once:
// NewBridge hangs many namespaces off one bridge (a fleet on a subnet);
// Host.Start runs a server in a namespace until the test ends; Host.Capture
// records a veth with tcpdump under the lab's one capture rule (never
// --immediate-mode: see Capture) and ReadPcap reads what it wrote.
//
// What a shaped-path test may assert is written in docs/testing.md: rates
// within the shaper's bounds, never a timing threshold.
package pathlab
