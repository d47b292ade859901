package main

import (
	"errors"
	"fmt"
	"io"
	"runtime"
)

// compatVersion is the iperf3 release whose options and output this tool
// follows.
const compatVersion = "3.21"

const usageShort = "Usage: iperf3 [-s|-c host] [options]\nTry `iperf3 --help' for more information.\n"

// printParseError prints a command-line error the way 3.21 does: getopt's
// complaint or "parameter error - ...", a blank line and the short usage.
func printParseError(w io.Writer, prog string, err error) {
	var pe *paramError
	if errors.As(err, &pe) {
		fmt.Fprintf(w, "iperf3: %s\n", pe.Error())
	} else {
		fmt.Fprintf(w, "%s: %s\n", prog, err)
	}
	fmt.Fprintf(w, "\n%s", usageShort)
}

func printVersion(w io.Writer) {
	fmt.Fprintf(w, "%s\n", versionLine())
	fmt.Fprintf(w, "%s\n", systemInfo())
	fmt.Fprintf(w, "Optional features available: TCP congestion algorithm setting (linux), authentication with RSA, POSIX threads, GSO/GRO support (linux), CPU affinity setting (linux), bind to device (linux), MPTCP\n")
}

// versionLine is 3.21's version string, naming this tool.
func versionLine() string {
	return fmt.Sprintf("iperf %s (netperfkit examples/iperf3, %s)", compatVersion, runtime.Version())
}

// usageLong follows the layout of 3.21's --help, listing the options this
// tool accepts.
const usageLong = `Usage: iperf3 [-s|-c host] [options]
       iperf3 [-h|--help] [-v|--version]

Server or Client:
  -p, --port      #         server port to listen on/connect to
  -f, --format   [kmgtKMGT] format to report: Kbits, Mbits, Gbits, Tbits
  -i, --interval  #         seconds between periodic throughput reports
                            (0: none; one line for the whole test at its end)
  -I, --pidfile file        write PID file (removed at exit)
  -F, --file name           xmit/recv the specified file (TCP; every stream opens it:
                            senders read it from its start, receivers write it from its start;
                            without -t/-n/-k a client's test is the file's size; not with --bidir)
  -A, --affinity n[,m]      set CPU affinity core number to n (the core the process will use)
                             (optional Client only m - the Server's core number for this test)
                            (linux; elsewhere an error says it is not available; a netperfkit
                            server pins the test's stream threads to m)
  -B, --bind <host>[%<dev>] bind to the interface associated with the address <host>
                            (optional <dev> equivalent to '--bind-dev <dev>')
  --bind-dev <dev>          bind to the network interface with SO_BINDTODEVICE
                            (every socket of a test, client or server; linux)
  -V, --verbose             more detailed output
  -J, --json                output in JSON format
  --json-stream             output in line-delimited JSON format
  --json-stream-full-output output in JSON format with JSON streams enabled
                            (with --json-stream, the whole -J document follows the
                            "end" event; without it, no change)
  --logfile f               send output to a log file
  --forceflush              force flushing output at every interval
  --timestamps<=format>     emit a timestamp at the start of each output line
                            (optional "=" and format string as per strftime(3))
  --rcv-timeout #           idle timeout for receiving data (default 120000 ms)
  --snd-timeout #           timeout for unacknowledged TCP data (in ms) (linux)
  --cntl-ka[=#/#/#]         use control connection TCP keepalive - KEEPIDLE/KEEPINTV/KEEPCNT
                            each value is optional with system settings default
                            (client: its control connection; server: every accepted connection)
  -m, --mptcp               use MPTCP rather than plain TCP
  -d, --debug[=#]           emit debugging output (optional "=" and debug level: 1-4.
                            Default is 4 - all messages): 1 failures, 2 also refused
                            connections, 3 also test state changes, 4 also the test's
                            parameters, every interval and the results, as the library
                            reports them
  -v, --version             show version information and quit
  -h, --help                show this message and quit
Server specific:
  -s, --server              run in server mode
  -D, --daemon              run the server as a daemon (linux, darwin: started again
                            in the background, in a new session)
  -1, --one-off             handle one client connection then exit
  --server-bitrate-limit #[KMG][/#]   server's total bit rate limit (default 0 = no limit)
                            (optional slash and number of secs interval for averaging
                            total data rate.  Default is 5 seconds)
  --idle-timeout #          restart idle server after # seconds
                            (with -1: exit after # idle seconds; without, there is
                            nothing to restart and the tool says so)
  --server-max-duration #   max time, in seconds, that an iperf test can run against the server
  --rsa-private-key-path    path to the RSA private key used to decrypt
                            authentication credentials
  --authorized-users-path   path to the configuration file containing user
                            credentials
  --time-skew-threshold     time skew threshold (in seconds) between the server
                            and client during the authentication process
  --use-pkcs1-padding       use pkcs1 padding at your own risk
Client specific:
  -c, --client <host>[%<dev>] run in client mode, connecting to <host>
                              (option <dev> equivalent to '--bind-dev <dev>')
  -u, --udp                 use UDP rather than TCP
  --connect-timeout #       timeout for control connection setup (ms)
  -b, --bitrate #[KMG][/#]  target bitrate in bits/sec (0 for unlimited)
                            (default 1 Mbit/sec for UDP, unlimited for TCP)
                            (optional slash and packet count for burst mode; --bandwidth is the same)
  --pacing-timer #[KMG]     set the Server timing for pacing, in microseconds
                            (accepted; not needed: netperfkit paces every write)
  --fq-rate #[KMG]          enable fair-queuing based socket pacing in bits/sec
  --no-fq-socket-pacing     deprecated: the same as --fq-rate 0
  -t, --time      #         time in seconds to transmit for (default 10 secs)
  -n, --bytes     #[KMG]    number of bytes to transmit (instead of -t or -k)
  -k, --blockcount #[KMG]   number of blocks (packets) to transmit (instead of -t or -n)
  -l, --length    #[KMG]    length of buffer to read or write
                            (default 128 KB for TCP, dynamic or 1460 for UDP; 0 is the default)
  --cport         <port>    bind to a specific client port
  -P, --parallel  #         number of parallel client streams to run
  -R, --reverse             run in reverse mode (server sends, client receives)
  --bidir                   run in bidirectional mode.
                            Client and server send and receive data.
  -w, --window    #[KMG]    set send/receive socket buffer sizes
  -C, --congestion <algo>   set TCP congestion control algorithm (Linux only;
                            --linux-congestion is the same)
  -M, --set-mss   #         set TCP maximum segment size (MTU - 40 bytes)
  -N, --no-delay            set TCP no delay, disabling Nagle's Algorithm
  -4, --version4            only use IPv4
  -6, --version6            only use IPv6
  -S, --tos N               set the IP type of service, 0-255
  -L, --flowlabel N         set the IPv6 flow label (linux; TCP and UDP streams)
  --dscp N or --dscp val    set the IP dscp value, either 0-63 or symbolic
  -Z, --zerocopy            use a 'zero copy' method of sending data
  --skip-rx-copy            ignore received messages using MSG_TRUNC option
  -O, --omit N              perform pre-test for N seconds and omit the pre-test statistics
  -T, --title str           prefix every output line with this string
  --extra-data str          data string to include in client and server JSON
  --get-server-output       get results from server
  --udp-counters-64bit      use 64-bit counters in UDP test packets
  --gsro                    enable UDP GSO/GRO on both client and server
  --repeating-payload       use repeating pattern in payload (netperfkit always does)
  --dont-fragment           set IPv4 Don't Fragment flag (UDP, linux)
  --username                username for authentication
                            (the password is read from IPERF3_PASSWORD)
  --rsa-public-key-path     path to the RSA public key used to encrypt
                            authentication credentials
netperfkit additions:
  --allowed-clients CIDR[,CIDR...]  (server) serve only clients in these networks; others
                            get "access denied" (iperf3's busy answer) before anything is read
  --max-tests-per-client #  (server) most tests one client IP may run at once, counted from
                            accept, so one host cannot hold every slot with stalled handshakes
  --max-tests #             (server) most tests run at once (default 4; iperf3 runs one:
                            --max-tests 1 answers others "the server is busy running a test")
  --rtt host:port           measure RTT under load against a sockperf-compatible UDP
                            echo server ("local" with --in-process)
  --in-process              test against an in-process server on loopback
  --stream-threads[=false]  send and receive each TCP stream on its own OS thread, as
                            iperf3 3.21 does (default); =false uses the Go poller (linux)
  --jitter-clock kernel|read  where a UDP receiver's arrival times come from: kernel
                            (when each datagram reached the socket: the path's jitter,
                            default) or read (when the read returned, as iperf3 measures)
  --keep-rate               UDP: drop what this host's own queue refuses (a full qdisc)
                            and keep offering the target rate, counting the drops apart
                            from loss (default: wait for the queue, as iperf3's socket);
                            with -R or --bidir a netperfkit server's sender does so too

[KMG] indicates options that support a K/M/G suffix for kilo-, mega-, or giga-
`
