package flowmodel

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/netperfkit/netperfkit/throughput/iperf3auth"
)

// Config is one test's settings. It is the single value that describes a
// test everywhere: Run takes it, the engine reads it, the server builds it
// from the client's parameters, and Result.Config reports it with the
// defaults filled in. A nil *Config means all defaults: one TCP stream for
// 10 s, client sending, 1 MiB writes.
type Config struct {
	// UDP selects UDP instead of TCP.
	UDP bool `json:"udp"`
	// Streams is the number of parallel streams per direction, 1..128; 0 means 1.
	Streams int `json:"streams"`
	// Duration of the test after Omit; 0 means 10 s unless Bytes or Blocks
	// is set, or SendFrom is and this side sends (the test then lasts until
	// the data is sent). Otherwise at least 10 ms: a shorter test measures
	// nothing but its own set-up. At most 100 years.
	Duration time.Duration `json:"duration_ns"`
	// Bytes ends the test after this many bytes (iperf3 -n); 0 means no limit.
	Bytes int64 `json:"bytes"`
	// Blocks ends the test after this many blocks (iperf3 -k); 0 means no limit.
	Blocks int64 `json:"blocks"`
	// Reverse makes the server send (iperf3 -R).
	Reverse bool `json:"reverse"`
	// Bidir makes both sides send at once (iperf3 --bidir).
	Bidir bool `json:"bidir"`
	// BlockLen is the write length; 0 means 1 MiB for TCP (iperf3 uses 128
	// KiB; larger writes cost fewer system calls) and, for UDP, the control
	// connection's TCP MSS as iperf3 3.21 picks it (8949 bytes on a
	// 9001-byte MTU), or 1460 bytes when that is unknown. iperf3's limits
	// apply: at most 1 MiB for TCP, 16..65507 bytes for UDP.
	BlockLen int `json:"block_len_bytes"`
	// Bitrate is the per-stream target in bits/s; 0 means iperf3's default
	// (1 Mbit/s, as 1024*1024, for UDP; unlimited for TCP), Unlimited (or
	// any negative) means no limit. NaN, and rates from 2^63 bits/s up, are
	// errors.
	Bitrate float64 `json:"bitrate_bits_per_second"`
	// Burst, with a target rate, writes this many blocks (UDP datagrams)
	// back to back and then waits for the rate to catch up, as iperf3's
	// "-b rate/burst" does; 0 lets the pacer choose (at most 50 us of the
	// rate per write). At most 1000, iperf3's limit.
	Burst int `json:"burst,omitempty"`
	// Omit is how long to send before counting starts (iperf3 -O), at most
	// 600 s (iperf3's limit); 0 means none.
	Omit time.Duration `json:"omit_ns"`
	// Interval between reports, at least 10 ms; 0 means 1 s, negative
	// disables interval reports.
	Interval time.Duration `json:"interval_ns"`
	// OnInterval, when set, is called with each interval report from a
	// single goroutine while the test runs; it must return quickly.
	OnInterval func(Interval) `json:"-"`
	// ConnectTimeout bounds each connection set-up; 0 means 10 s, and a
	// negative one is an error.
	ConnectTimeout time.Duration `json:"-"`
	// IOTimeout bounds every read and write on the control connection and
	// every data write; 0 means 10 s, and a negative one is an error.
	// Cancelling the context ends any of them at once: timeouts are for
	// silent peers, not for stopping.
	IOTimeout time.Duration `json:"-"`
	// RecvTimeout fails a running test when this side receives nothing
	// for so long (iperf3 --rcv-timeout, "idle timeout for receiving
	// data"); it applies to the client's receiving streams (-R, --bidir).
	// 0 means 120 s, iperf3's default; negative disables it.
	RecvTimeout time.Duration `json:"recv_timeout_ns,omitempty"`
	// OnEvent, when set, receives the test's events (start, interval,
	// error, end) as iperf3 3.21's --json-stream reports them, from one
	// goroutine at a time; it must return quickly. OnInterval, when also
	// set, still receives the intervals.
	OnEvent func(Event) `json:"-"`
	// SendFrom, when set, opens the data each stream this side sends on
	// carries instead of the package's pattern. It is called once per
	// sending stream, with the stream's id (StreamInterval.ID: 1, 3, 4, ...),
	// after the streams connect and before the test starts; an error ends
	// Run with it. Each call should return a reader of its own: streams
	// read theirs at the same time. A stream sends its reader's bytes in
	// writes of up to BlockLen and stops at its end; once every sending
	// stream's reader has ended, the test ends, as iperf3's does when its
	// -F file is sent. Without Duration, Bytes and Blocks the test lasts
	// until then. A read error other than io.EOF ends the test with it.
	// Reads should return promptly: the test cannot end while one is in
	// progress, except that a reader with a SetReadDeadline method (a
	// pipe's *os.File, a net.Conn) has its deadline set when the test
	// ends. With ZeroCopy, a reader that is an *os.File holding a regular
	// file is sent with sendfile(2) from the file itself, from its current
	// offset to its size when the stream starts (linux); the bytes of any
	// other reader are copied into each write, and Result.Notes says so. A
	// reader that is an io.Closer is closed when the test ends.
	SendFrom func(stream int) (io.Reader, error) `json:"-"`
	// ReceiveTo, when set, opens where each stream this side receives on
	// writes what it receives (iperf3 -F on the receiving side): every
	// byte the stream delivers, in order, including those of the omit
	// period and those still in flight when the peer ends the test (the
	// receiver reads on until its streams go quiet, and a sink's write in
	// progress holds that off for up to IOTimeout, so a sink that stalls
	// for a moment loses nothing). It is called once per receiving stream,
	// with the stream's id, as SendFrom is. A write error ends the test
	// and Run returns it, even when it happens once the test's time is
	// over; so does the error of closing a writer that is an io.Closer,
	// which happens when the test ends. Writes should return promptly, as
	// SendFrom's reads (a writer with a SetWriteDeadline method has its
	// deadline set when the test ends). It excludes SkipRxCopy.
	ReceiveTo func(stream int) (io.Writer, error) `json:"-"`

	// SocketOptions set up this side's sockets and data path: buffers,
	// TCP and IP options, the interface and addresses, UDP offloads,
	// zero copy and stream threads. The zero value leaves the system's
	// defaults and lets the package choose its fast paths.
	SocketOptions
	// The fields from here to ServerAffinity are the ones only iperf3's
	// protocol or its command line need: the title and extra data it
	// carries, its legacy counters, the server's output and CPU, and its
	// RSA authentication.
	// GetServerOutput asks the server for its own report (iperf3
	// --get-server-output). The client asks for it anyway in reverse and
	// bidirectional TCP tests to fill in the server's TCP_INFO.
	GetServerOutput bool `json:"get_server_output,omitempty"`
	// UDP32BitCounters uses iperf3's legacy 32-bit packet counters; the
	// default is 64-bit counters.
	UDP32BitCounters bool `json:"udp_32bit_counters,omitempty"`
	// Title is sent to the server as iperf3's title parameter. Title and
	// ExtraData together must leave the parameters within iperf3's 8 KiB.
	Title string `json:"title,omitempty"`
	// Auth, when set, sends iperf3's RSA credentials to a server that
	// requires them. A refusal returns an error matching ErrAuthFailed (and
	// ErrAccessDenied). Result.Config never carries it.
	Auth *iperf3auth.Client `json:"-"`
	// ExtraData is sent to the server and written as "extra_data" in both
	// ends' iperf3 documents (iperf3 --extra-data).
	ExtraData string `json:"extra_data,omitempty"`
	// RepeatingPayload asks a stock server for a repeating payload pattern
	// (iperf3 --repeating-payload); this package always sends one.
	RepeatingPayload bool `json:"repeating_payload,omitempty"`
	// ServerAffinity, when set, asks the server to run the test's data
	// streams on that CPU, 0..1024 (iperf3 -A n,m: m), as 3.21's
	// server_affinity parameter; nil asks nothing. A 3.21 server pins its
	// whole process for the test. This package's server pins the test's
	// stream goroutines, each locked to an OS thread (see "Server
	// affinity" in the package documentation), and refuses a CPU outside
	// its own allowed set as 3.21 reports a failed sched_setaffinity: a
	// *ServerError with iperf3's IEAFFINITY (132, "unable to set CPU
	// affinity") and EINVAL.
	ServerAffinity *int `json:"server_affinity,omitempty"`
	// UDPKeepRate makes a UDP sender drop a datagram its own host refuses
	// (ENOBUFS: a full qdisc or device queue) and keep offering the target
	// rate, counting it in Counts.LocalDrops. By default the sender waits
	// for the queue and offers the datagram again, as iperf3's blocking
	// socket does: the offered rate falls to what the host can send, and
	// Counts.LocalRetries says how often it waited. Either way a datagram
	// counts as sent only once the kernel took it, and one the host
	// dropped is never counted as lost on the path (its counter is not
	// used). It applies to the streams this side sends and, in a Reverse
	// or Bidir test against a netperfkit server, to those the server sends:
	// the client asks for it with its parameters (a stock iperf3 server
	// ignores the request and waits, as iperf3 does).
	UDPKeepRate bool `json:"udp_keep_rate,omitempty"`
}

// SocketOptions are a Config's socket and data-path settings (iperf3's -w,
// -M, -N, -C, -S, -B, --cport, --bind-dev, -m, -L, -Z, --gsro and their
// kind). Their fields are promoted: cfg.Window is cfg.SocketOptions.Window.
type SocketOptions struct {
	// ReadLen is the size of each TCP receive read; 0 means 128 KiB, at
	// most 1 MiB.
	ReadLen int `json:"read_len_bytes,omitempty"`
	// StreamThreads gives each TCP stream of this side its own OS thread,
	// which sleeps in the kernel's read or write as iperf3 3.21's stream
	// threads do, instead of the Go poller (linux; elsewhere it is
	// ignored; ZeroCopy senders use sendfile there). While such a thread runs,
	// GOMAXPROCS is one higher, so that Go code keeps as many Ps as
	// before; see StreamThreads in doc.go.
	StreamThreads bool `json:"stream_threads,omitempty"`
	// Window sets SO_SNDBUF and SO_RCVBUF on the data sockets, at most 512
	// MiB (iperf3's limit); 0 leaves the OS default.
	Window int `json:"window_bytes,omitempty"`
	// MSS sets TCP_MAXSEG (linux), at most 32767 bytes (iperf3's limit); 0
	// leaves the default.
	MSS int `json:"mss,omitempty"`
	// NoDelay sets TCP_NODELAY on the data streams.
	NoDelay bool `json:"no_delay,omitempty"`
	// Congestion selects the TCP congestion control algorithm (linux), "" the default.
	Congestion string `json:"congestion,omitempty"`
	// DisableFastPath turns off UDP GSO and GRO on linux, whatever GSO and GRO say.
	DisableFastPath bool `json:"disable_fast_path,omitempty"`
	// BindAddr is the local IP address of the client's connections (iperf3
	// -B); "" lets the OS choose.
	BindAddr string `json:"bind_addr,omitempty"`
	// ClientPort is the local port of the first data stream, the next ones
	// taking the following ports, as iperf3 --cport does; 0 lets the OS
	// choose; every stream's port must be at most 65535. The control
	// connection always uses an ephemeral port.
	ClientPort int `json:"client_port,omitempty"`
	// TOS is the IP type-of-service byte (IPv6: traffic class) of the
	// data streams at both ends (iperf3 -S; --dscp is the DSCP shifted left
	// by 2); 0 leaves the default. Not available on windows (a note says so).
	TOS int `json:"tos,omitempty"`
	// DontFragment sets the IPv4 don't-fragment bit on UDP datagrams at
	// both ends (iperf3 --dont-fragment; linux).
	DontFragment bool `json:"dont_fragment,omitempty"`
	// SendTimeout bounds how long the client's sent data may stay
	// unacknowledged before the kernel drops the connection
	// (TCP_USER_TIMEOUT, iperf3 --snd-timeout; linux), at most 2^31-1 ms;
	// 0 leaves the default.
	SendTimeout time.Duration `json:"send_timeout_ns,omitempty"`
	// BindDevice binds every socket of the test, control and data, to this
	// network interface (SO_BINDTODEVICE, iperf3 --bind-dev or -B addr%dev;
	// linux: elsewhere Run fails with an error matching errors.ErrUnsupported); "" leaves routing
	// to choose.
	BindDevice string `json:"bind_device,omitempty"`
	// MPTCP dials the control and TCP data connections with Multipath TCP
	// (iperf3 -m) and tells the server, as a 3.21 client does. Where the
	// kernel or the server has no MPTCP, the connections fall back to TCP.
	MPTCP bool `json:"mptcp,omitempty"`
	// ControlKeepAlive, when set, gives the control connection's TCP
	// keepalive probes these settings (iperf3 --cntl-ka; Enable is implied,
	// and a zero or negative field keeps Go's or the system's value), so
	// that a path that silently drops an idle connection is noticed soon.
	// Nil keeps Go's defaults (probes after 15 s idle).
	ControlKeepAlive *net.KeepAliveConfig `json:"-"`
	// GSO switches UDP send segmentation (linux UDP_SEGMENT): true on,
	// false off, nil lets the package decide, which uses it. With a target
	// rate one write carries at most 50 us of the rate (4 datagrams of
	// 1400 bytes at 1 Gbit/s), so pacing stays smooth. iperf3 3.21's
	// --gsro is GSO and GRO both true. In JSON both are 1 (on), 2 (off)
	// or absent (the package decides), as they have always been written.
	GSO *bool `json:"gso,omitempty"`
	// GRO switches UDP receive coalescing (linux UDP_GRO): true on, false
	// off; nil uses it only without a target rate: a paced test reads
	// datagram by datagram, so each has its own arrival time for the
	// jitter.
	GRO *bool `json:"gro,omitempty"`
	// JitterRead makes this side's UDP receivers take each datagram's
	// arrival time for the jitter (RFC 3550's interarrival jitter, as
	// iperf3 computes it) from the moment their read returned, as
	// iperf3's receiver does, instead of from the kernel (a server's tests
	// take ServerConfig.JitterRead). By default the time is the one the
	// datagram reached the socket (SO_TIMESTAMPNS, linux), so the figure
	// is the path's: a packet capture of the flow gives the same; where
	// the kernel's time is not available (GRO reads, SkipRxCopy, other
	// platforms) it is the time the read returned. The read's time adds
	// the receiver's own wake-ups and reads behind a queue (on an idle
	// loopback, a few microseconds where the path's is under one): use it
	// to compare with jitter that iperf3 measured. Linux reads datagram by
	// datagram outside the Go poller, as an iperf3 thread does, so the
	// wake-ups are the kernel's, not the runtime's.
	JitterRead bool `json:"jitter_read,omitempty"`
	// SkipRxCopy receives with MSG_TRUNC, so the kernel drops the payload
	// instead of copying it (iperf3 --skip-rx-copy; UDP reads only the
	// datagram header). GRO reads ignore it, as iperf3's do.
	SkipRxCopy bool `json:"skip_rx_copy,omitempty"`
	// ZeroCopy sends TCP data with sendfile from a temporary file instead
	// of copying every write (iperf3 -Z). UDP ignores it, as iperf3 does.
	ZeroCopy bool `json:"zerocopy,omitempty"`
	// FQRate caps each data socket's pacing in the kernel
	// (SO_MAX_PACING_RATE, iperf3 --fq-rate) in bits/s; 0 leaves it, except
	// that a paced UDP stream sets it to its target rate (it takes effect
	// under the fq qdisc; the package's own pacer works without). Negative
	// is an error.
	FQRate float64 `json:"fq_rate_bits_per_second,omitempty"`
	// FlowLabel is the IPv6 flow label of the test's data, 1..0xfffff
	// (iperf3 -L); 0 leaves the kernel's own (a hash of the connection).
	// The client's TCP and UDP data sockets carry it from their first
	// packet (IPV6_FLOWLABEL_MGR and IPV6_FLOWINFO_SEND; linux: elsewhere
	// a note says it is not available and the test runs without it), the
	// control connection does not, as in 3.21. It is sent as 3.21's
	// flowlabel parameter, and this package's server then labels its UDP
	// streams too, so reverse and bidirectional UDP data carries it both
	// ways. A server's TCP streams keep the kernel's label: linux gives an
	// accepted socket none of its own (unless net.ipv6.flowlabel_reflect
	// makes it reflect the client's), so with Reverse only the client's
	// ACKs carry it, as with 3.21. A TCP stream to an IPv4 address fails
	// with ErrFlowLabel, as 3.21's; an IPv4 UDP test runs without a label
	// and a note says so (3.21 labels no UDP socket at all).
	FlowLabel int `json:"flowlabel,omitempty"`
}

// On reports whether an offload switch (SocketOptions.GSO, GRO) is on.
func On(p *bool) bool { return p != nil && *p }

// Off reports whether an offload switch is off.
func Off(p *bool) bool { return p != nil && !*p }

// offload is an offload switch's JSON form: 0 (absent) lets the package
// decide, 1 is on, 2 off.
type offload int8

func offloadOf(p *bool) offload {
	switch {
	case On(p):
		return 1
	case Off(p):
		return 2
	}
	return 0
}

func (o offload) ptr() *bool {
	switch o {
	case 1:
		return new(true)
	case 2:
		return new(false)
	}
	return nil
}

// MarshalJSON writes the settings with the offload switches as the numbers
// they have always been (gso and gro: 1 on, 2 off, absent when the package
// decides).
func (c Config) MarshalJSON() ([]byte, error) {
	type plain Config // without these methods
	return json.Marshal(struct {
		plain
		GSO offload `json:"gso,omitempty"`
		GRO offload `json:"gro,omitempty"`
	}{plain(c), offloadOf(c.GSO), offloadOf(c.GRO)})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (c *Config) UnmarshalJSON(b []byte) error {
	if c == nil {
		return errors.New("throughput: Config.UnmarshalJSON: nil *Config")
	}
	type plain Config
	w := struct {
		*plain
		GSO offload `json:"gso"`
		GRO offload `json:"gro"`
	}{plain: (*plain)(c)}
	if err := json.Unmarshal(b, &w); err != nil {
		return fmt.Errorf("throughput: config JSON: %w", err)
	}
	c.GSO, c.GRO = w.GSO.ptr(), w.GRO.ptr()
	return nil
}
