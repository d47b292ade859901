package throughput

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"time"

	"github.com/netperfkit/netperfkit/internal/iperfwire"
	"github.com/netperfkit/netperfkit/throughput/iperf3auth"
)

// Unlimited as Config.Bitrate asks for no rate limit (iperf3's -b 0).
const Unlimited = -1

// DefaultPort is iperf3's default port.
const DefaultPort = 5201

// MaxStreams is iperf3's limit on parallel streams (per direction).
const MaxStreams = 128

// maxBurst is the largest Config.Burst, iperf3's limit.
const maxBurst = 1000

// Defaults, named once; Config's and ServerConfig's docs state them.
const (
	defaultDuration       = 10 * time.Second
	minDuration           = 10 * time.Millisecond // Config.Duration's doc states it
	defaultBlockLen       = 1 << 20               // TCP writes; iperf3's is 128 KiB, larger writes cost fewer system calls
	iperfTCPBlockLen      = 128 << 10
	defaultUDPLen         = 1460
	defaultUDPBitrate     = 1024 * 1024 // iperf3's 1 Mbit/s, as 1024*1024
	defaultInterval       = time.Second
	defaultConnectTimeout = 10 * time.Second
	defaultIOTimeout      = 10 * time.Second
	defaultRecvTimeout    = 120 * time.Second
	// defaultReadLen is the TCP receive read size, iperf3's. A stock
	// iperf3 3.21 client into our server (docs/benchmarks.md, issue 10)
	// got 1.4x the goodput at 0.63x the CPU per byte with 128 KiB reads
	// than with 16 KiB ones: most of a receiver's cycles are the read
	// system call, and each one also returns window to the sender.
	defaultReadLen = 128 << 10
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
	// Iperf3Options are the fields only iperf3's protocol or its command
	// line need: the title and extra data it carries, its legacy counters,
	// the server's output and CPU, and its RSA authentication.
	Iperf3Options
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
	// linux: elsewhere Run fails with ErrNotAvailable); "" leaves routing
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
	// GSO switches UDP send segmentation (linux UDP_SEGMENT); OffloadAuto
	// uses it. With a target rate one write carries at most 50 us of the
	// rate (4 datagrams of 1400 bytes at 1 Gbit/s), so pacing stays smooth.
	// iperf3 3.21's --gsro is GSO and GRO OffloadOn.
	GSO Offload `json:"gso,omitempty"`
	// GRO switches UDP receive coalescing (linux UDP_GRO). OffloadAuto uses
	// it only without a target rate: a paced test reads datagram by
	// datagram, so each has its own arrival time for the jitter.
	GRO Offload `json:"gro,omitempty"`
	// JitterClock is the clock this side's UDP receivers take each
	// datagram's arrival time from for the jitter (a server's tests take
	// ServerConfig.JitterClock). The default is the kernel's.
	JitterClock JitterClock `json:"jitter_clock,omitempty"`
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

// Iperf3Options are a Config's fields that only iperf3's protocol or its
// command line need. Their fields are promoted, as SocketOptions' are.
type Iperf3Options struct {
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

	// authNow is the clock of Auth's token, a test seam; nil means time.Now.
	authNow func() time.Time
}

// maxFlowLabel is the largest IPv6 flow label (20 bits).
const maxFlowLabel = 0xfffff

// maxAffinity is iperf3's bound on a CPU number (-A and server_affinity).
const maxAffinity = 1024

// Offload is a three-way switch for a kernel offload.
type Offload int8

// Offload settings; the zero value lets the package decide.
const (
	OffloadAuto Offload = iota
	OffloadOn
	OffloadOff
)

// JitterClock is where a UDP receiver's arrival times come from. The
// jitter is RFC 3550's interarrival jitter, as iperf3 computes it: a
// running mean of the change in transit time (arrival minus the sender's
// stamp) from one datagram to the next.
type JitterClock int8

const (
	// JitterKernel takes the time each datagram reached the socket
	// (SO_TIMESTAMPNS, linux), so the figure is the path's: a packet
	// capture of the flow gives the same. Where the kernel's time is not
	// available (GRO reads, SkipRxCopy, other platforms) it is the time the
	// read returned.
	JitterKernel JitterClock = iota
	// JitterRead takes the time the receiver's read returned, as iperf3's
	// receiver does. The figure then includes the receiver's own wake-ups
	// and reads behind a queue (on an idle loopback, a few microseconds
	// where the path's is under one): use it to compare with jitter that
	// iperf3 measured. Linux reads datagram by datagram outside the Go
	// poller, as an iperf3 thread does, so the wake-ups are the kernel's,
	// not the runtime's.
	JitterRead
)

// String returns "kernel" or "read".
func (c JitterClock) String() string {
	switch c {
	case JitterKernel:
		return "kernel"
	case JitterRead:
		return "read"
	}
	return fmt.Sprintf("JitterClock(%d)", int8(c))
}

// MarshalText writes String's form, so results name the clock.
func (c JitterClock) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText reads String's form.
func (c *JitterClock) UnmarshalText(b []byte) error {
	v, err := ParseJitterClock(string(b))
	if err == nil {
		*c = v
	}
	return err
}

// ParseJitterClock parses "kernel" or "read" (String's forms).
func ParseJitterClock(s string) (JitterClock, error) {
	for _, c := range []JitterClock{JitterKernel, JitterRead} {
		if s == c.String() {
			return c, nil
		}
	}
	return 0, fmt.Errorf("throughput: jitter clock %q: want kernel or read", s)
}

// authClock is the time Auth's token carries.
func (c *Config) authClock() time.Time {
	if c.authNow != nil {
		return c.authNow()
	}
	return time.Now()
}

// useGSO reports whether UDP senders try GSO.
func (c *Config) useGSO() bool { return !c.DisableFastPath && c.GSO != OffloadOff }

// useGRO reports whether UDP receivers try GRO: when asked to, and by
// default only without a target rate.
func (c *Config) useGRO() bool {
	switch {
	case c.DisableFastPath || c.GRO == OffloadOff:
		return false
	case c.GRO == OffloadOn:
		return true
	}
	return c.rate() == 0
}

// pacingRate is the SO_MAX_PACING_RATE for the data sockets, in bits/s
// (0: leave it): FQRate, or a paced UDP stream's target rate.
func (c *Config) pacingRate() float64 {
	if c.FQRate > 0 {
		return c.FQRate
	}
	if c.UDP {
		return c.rate()
	}
	return 0
}

// dataPathParams adds the data-path options to a client's parameters, in
// 3.21's keys (it sends gso and gro with every UDP test). As a 3.21 client,
// it asks the server for GSO and GRO only when they are switched on
// (--gsro): a 3.21 server takes gso 1 at its word and sends GSO batches of
// gso_bf_size bytes, which it leaves at 64 KiB when not told, more segments
// than the kernel takes in one send for datagrams below 1 KiB, so that it
// sends nothing. When on, gso_bf_size is the batch this side sends too.
func (c *Config) dataPathParams(p *iperfwire.Params) {
	flag := func(b bool) *iperfwire.Int {
		if b {
			return iperfwire.PtrInt(1)
		}
		return iperfwire.PtrInt(0)
	}
	if c.UDP {
		gso := c.GSO == OffloadOn && c.useGSO()
		p.GSO, p.GRO = flag(gso), flag(c.GRO == OffloadOn && c.useGRO())
		if gso {
			p.GSODgSize = iperfwire.Int(c.BlockLen)
			p.GSOBfSize = iperfwire.Int(maxGSOBatch(c.BlockLen) * c.BlockLen)
		}
	}
	if c.SkipRxCopy {
		p.SkipRxCopy = 1
	}
	if c.ZeroCopy {
		p.ZeroCopy = 1
	}
	p.FQRate = iperfwire.Int(c.FQRate)
}

// dataPathFromParams sets the data-path options from a client's
// parameters. A gso or gro of 1 is a request (--gsro); 0, which every 3.21
// client sends without --gsro, and an absent key (before 3.21) leave the
// choice to this side, as for a Config's OffloadAuto: GSO and GRO change how
// this side writes and reads, not the datagrams on the wire.
func (c *Config) dataPathFromParams(p *iperfwire.Params) {
	on := func(v *iperfwire.Int) Offload {
		if v != nil && *v > 0 {
			return OffloadOn
		}
		return OffloadAuto
	}
	c.GSO, c.GRO = on(p.GSO), on(p.GRO)
	c.SkipRxCopy, c.ZeroCopy = p.SkipRxCopy != 0, p.ZeroCopy != 0
	c.FQRate = float64(max(p.FQRate, 0))
}

func (c *Config) withDefaults() Config {
	var d Config
	if c != nil {
		d = *c
	}
	if d.Streams == 0 {
		d.Streams = 1
	}
	if d.Duration == 0 && d.Bytes == 0 && d.Blocks == 0 && !d.untilSent() {
		d.Duration = defaultDuration
	}
	if d.BlockLen == 0 {
		d.BlockLen = defaultBlockLen
		if d.UDP {
			d.BlockLen = defaultUDPLen
		}
	}
	if d.Bitrate == 0 && d.UDP {
		d.Bitrate = defaultUDPBitrate
	}
	if d.Bitrate <= 0 {
		d.Bitrate = Unlimited
	}
	if d.ReadLen == 0 {
		d.ReadLen = defaultReadLen
	}
	if d.Interval == 0 {
		d.Interval = defaultInterval
	}
	if d.ConnectTimeout <= 0 {
		d.ConnectTimeout = defaultConnectTimeout
	}
	if d.IOTimeout <= 0 {
		d.IOTimeout = defaultIOTimeout
	}
	if d.RecvTimeout == 0 {
		d.RecvTimeout = defaultRecvTimeout
	}
	return d
}

// Limits of a Config's sizes that are iperf3's own (src/iperf.h, 3.21),
// so that a test a stock server would refuse fails before it connects.
const (
	maxWindow   = 512 << 20 // MAX_TCP_BUFFER
	maxMSS      = 32767     // MAX_MSS
	maxOmit     = maxOmitSecs * time.Second
	maxDuration = maxTimeSecs * time.Second // not iperf3's 1-day MAX_TIME: a netperfkit server may allow more
	minInterval = 10 * time.Millisecond     // a shorter one reports on its own reporting
	// maxRate bounds a rate in bits/s to what iperf3's integer fields carry.
	maxRate = float64(1 << 63)
	// maxSendTimeout is TCP_USER_TIMEOUT's largest, a C int of milliseconds.
	maxSendTimeout = math.MaxInt32 * time.Millisecond
)

func (c *Config) validate() error {
	if err := c.validateSizes(); err != nil {
		return err
	}
	switch {
	case c.Reverse && c.Bidir:
		return errors.New("throughput: Config.Reverse and Config.Bidir are exclusive")
	case c.Duration < 0:
		return fmt.Errorf("throughput: Config.Duration %v is negative", c.Duration)
	case c.Duration > 0 && c.Duration < minDuration:
		return fmt.Errorf("throughput: Config.Duration %v below the minimum %v", c.Duration, minDuration)
	case c.Duration > maxDuration:
		return fmt.Errorf("throughput: Config.Duration %v above the maximum %v", c.Duration, maxDuration)
	case c.Omit < 0:
		return fmt.Errorf("throughput: Config.Omit %v is negative", c.Omit)
	case c.Omit > maxOmit:
		return fmt.Errorf("throughput: Config.Omit %v above iperf3's maximum %v", c.Omit, maxOmit)
	case c.Interval > 0 && c.Interval < minInterval:
		return fmt.Errorf("throughput: Config.Interval %v below the minimum %v (negative disables reports)", c.Interval, minInterval)
	case c.Bytes < 0 || c.Blocks < 0:
		return fmt.Errorf("throughput: Config.Bytes %d or Config.Blocks %d is negative", c.Bytes, c.Blocks)
	case c.TOS < 0 || c.TOS > 255:
		return fmt.Errorf("throughput: Config.TOS %d outside 0..255", c.TOS)
	case c.SendTimeout < 0:
		return errors.New("throughput: Config.SendTimeout is negative")
	case c.SendTimeout > maxSendTimeout:
		return fmt.Errorf("throughput: Config.SendTimeout %v above the kernel's maximum %v", c.SendTimeout, maxSendTimeout)
	case c.ClientPort < 0 || c.ClientPort > 65535:
		return fmt.Errorf("throughput: Config.ClientPort %d outside 0..65535", c.ClientPort)
	case c.ClientPort > 0 && c.ClientPort+len(c.sends(false))-1 > 65535:
		return fmt.Errorf("throughput: Config.ClientPort %d: its %d streams take ports past 65535", c.ClientPort, len(c.sends(false)))
	case c.BindAddr != "" && net.ParseIP(c.BindAddr) == nil:
		return fmt.Errorf("throughput: Config.BindAddr %q is not an IP address", c.BindAddr)
	case c.BindDevice != "" && !bindDeviceAvailable:
		return fmt.Errorf("throughput: Config.BindDevice: %w", ErrNotAvailable)
	case c.FlowLabel < 0 || c.FlowLabel > maxFlowLabel:
		return fmt.Errorf("throughput: Config.FlowLabel %d outside 1..%d", c.FlowLabel, maxFlowLabel)
	case c.ServerAffinity != nil && (*c.ServerAffinity < 0 || *c.ServerAffinity > maxAffinity):
		return fmt.Errorf("throughput: Config.ServerAffinity %d outside 0..%d", *c.ServerAffinity, maxAffinity)
	case len(c.BindDevice) > maxIfaceName:
		return fmt.Errorf("throughput: Config.BindDevice %q: longer than %d bytes", c.BindDevice, maxIfaceName)
	case c.UDP && (c.SendFrom != nil || c.ReceiveTo != nil):
		return fmt.Errorf("%w: SendFrom and ReceiveTo need TCP (UDP datagrams carry iperf3's header)", ErrDataNeedsTCP)
	case c.SkipRxCopy && c.ReceiveTo != nil:
		return errors.New("throughput: Config.SkipRxCopy drops the data Config.ReceiveTo would write")
	}
	if pj, err := json.Marshal(c.params()); err == nil {
		if err := c.paramsFit(len(pj)); err != nil {
			return err
		}
	}
	return validateAuth(c.Auth)
}

// validateSizes checks every size and rate a Config carries against
// iperf3's limits, naming the field and its unit.
func (c *Config) validateSizes() error {
	udpMin, udpMax := iperfwire.MinUDPLen, iperfwire.MaxUDPLen
	switch {
	case c.Streams < 1 || c.Streams > MaxStreams:
		return fmt.Errorf("throughput: Config.Streams %d outside 1..%d", c.Streams, MaxStreams)
	case c.UDP && (c.BlockLen < udpMin || c.BlockLen > udpMax):
		return fmt.Errorf("throughput: Config.BlockLen %d bytes outside iperf3's %d..%d bytes for UDP", c.BlockLen, udpMin, udpMax)
	case c.BlockLen < 1:
		return fmt.Errorf("throughput: Config.BlockLen %d bytes is negative", c.BlockLen)
	case c.BlockLen > maxTCPBlockLen:
		return fmt.Errorf("throughput: Config.BlockLen %d bytes above iperf3's maximum of %d bytes for TCP", c.BlockLen, maxTCPBlockLen)
	case c.ReadLen < 1 || c.ReadLen > maxTCPBlockLen:
		return fmt.Errorf("throughput: Config.ReadLen %d bytes outside 0..%d bytes", c.ReadLen, maxTCPBlockLen)
	case c.Window < 0 || c.Window > maxWindow:
		return fmt.Errorf("throughput: Config.Window %d bytes outside iperf3's 0..%d bytes", c.Window, maxWindow)
	case c.MSS < 0 || c.MSS > maxMSS:
		return fmt.Errorf("throughput: Config.MSS %d bytes outside iperf3's 0..%d bytes", c.MSS, maxMSS)
	case math.IsNaN(c.Bitrate) || c.Bitrate >= maxRate:
		return fmt.Errorf("throughput: Config.Bitrate %g bits/s is not a rate below 2^63 bits/s", c.Bitrate)
	case !(c.FQRate >= 0) || c.FQRate >= maxRate:
		return fmt.Errorf("throughput: Config.FQRate %g bits/s outside 0..2^63 bits/s", c.FQRate)
	case c.Burst < 0 || c.Burst > maxBurst:
		return fmt.Errorf("throughput: Config.Burst %d outside 0..%d", c.Burst, maxBurst)
	}
	return nil
}

// paramsFit is an error when the parameters' JSON, n bytes, is larger
// than a server reads (iperf3's limit too), naming the fields that can
// make it so: a refusal before the server's.
func (c *Config) paramsFit(n int) error {
	if n <= maxParamsBytes {
		return nil
	}
	return fmt.Errorf("throughput: Config.Title (%d bytes) and Config.ExtraData (%d bytes) make parameters of %d bytes, above iperf3's limit of %d bytes",
		len(c.Title), len(c.ExtraData), n, maxParamsBytes)
}

// untilSent reports whether the client's test lasts, unless told
// otherwise, until its SendFrom data is sent: it has a source and sends.
func (c *Config) untilSent() bool { return c.SendFrom != nil && (!c.Reverse || c.Bidir) }

// withoutHooks is c as Result.Config reports it: without callbacks,
// credentials and data sources and sinks.
func (c Config) withoutHooks() Config {
	c.OnInterval, c.OnEvent, c.Auth, c.SendFrom, c.ReceiveTo = nil, nil, nil, nil, nil
	return c
}

// rate is the per-stream target in bits/s, 0 when unlimited.
func (c *Config) rate() float64 {
	if c.Bitrate > 0 {
		return c.Bitrate
	}
	return 0
}

// counters64 reports whether UDP datagrams carry 64-bit counters.
func (c *Config) counters64() bool { return !c.UDP32BitCounters }

// sends lists, in iperf3's stream order, whether this side sends on each
// stream. The client opens its senders first with --bidir, and the server
// sees them first, as its receivers.
func (c *Config) sends(server bool) []bool {
	first := !c.Reverse // client-to-server streams
	if c.Bidir {
		first = true
	}
	var out []bool
	for range c.Streams {
		out = append(out, first != server)
	}
	if c.Bidir {
		for range c.Streams {
			out = append(out, server)
		}
	}
	return out
}

// params is the client's parameter object for this test.
func (c *Config) params() *iperfwire.Params {
	w := func(v int64) iperfwire.Int { return iperfwire.Int(v) }
	p := &iperfwire.Params{
		Omit: w(int64(c.Omit / time.Second)), Time: w(int64(c.Duration / time.Second)),
		Num: w(c.Bytes), BlockCount: w(c.Blocks), Parallel: w(int64(c.Streams)),
		Len: w(int64(c.BlockLen)), Bandwidth: w(int64(c.rate())), MSS: w(int64(c.MSS)),
		Window: w(int64(c.Window)), NoDelay: iperfwire.Flag(c.NoDelay), Reverse: iperfwire.Flag(c.Reverse),
		Bidirectional: iperfwire.Flag(c.Bidir), Congestion: c.Congestion, Title: c.Title,
		ClientVersion: "3.12", TOS: w(int64(c.TOS)), ExtraData: c.ExtraData, Burst: w(int64(c.Burst)),
	}
	if c.RepeatingPayload {
		p.RepeatingPayload = 1
	}
	if c.DontFragment {
		p.DontFragment = 1
	}
	p.MPTCP = iperfwire.Flag(c.MPTCP)
	p.FlowLabel = iperfwire.Int(c.FlowLabel)
	if a := c.ServerAffinity; a != nil {
		p.ServerAffinity = iperfwire.PtrInt(int64(*a))
	}
	// iperf3 only knows whole seconds; a sub-second duration rounds up so
	// the server does not end first.
	if c.Duration%time.Second != 0 {
		p.Time++
	}
	if c.Omit%time.Second != 0 {
		p.Omit++
	}
	if c.UDP {
		p.UDP, p.KeepRate = true, iperfwire.Flag(c.UDPKeepRate)
		if c.rate() > 0 {
			p.PacingTimer = 1000
		}
		if c.counters64() {
			p.UDPCounters64 = 1
		}
	} else {
		p.TCP = true
	}
	c.dataPathParams(p)
	if c.GetServerOutput || (!c.UDP && (c.Reverse || c.Bidir)) {
		p.GetServerOutput = 1
		p.JSONOutput = true
		if c.Interval > 0 {
			p.Interval = c.Interval.Seconds()
		}
	}
	return p
}

// configFromParams is the server's Config for a client's parameters (already
// checked against the server's limits).
func configFromParams(p *iperfwire.Params, sc *ServerConfig) Config {
	c := Config{
		UDP:           bool(p.UDP),
		Streams:       int(p.Parallel),
		Duration:      time.Duration(p.Time) * time.Second,
		Omit:          time.Duration(p.Omit) * time.Second,
		Bytes:         int64(p.Num),
		Blocks:        int64(p.BlockCount),
		Reverse:       bool(p.Reverse),
		Bidir:         bool(p.Bidirectional),
		BlockLen:      int(p.Len),
		Bitrate:       float64(p.Bandwidth),
		UDPKeepRate:   bool(p.KeepRate),
		Interval:      sc.Interval,
		IOTimeout:     sc.IOTimeout,
		RecvTimeout:   sc.RecvTimeout,
		SendFrom:      sc.SendFrom,
		ReceiveTo:     sc.ReceiveTo,
		Iperf3Options: Iperf3Options{Title: p.Title, ExtraData: p.ExtraData, RepeatingPayload: p.RepeatingPayload != 0, GetServerOutput: p.GetServerOutput != 0, UDP32BitCounters: p.UDPCounters64 == 0},
		SocketOptions: SocketOptions{Window: int(p.Window), MSS: int(p.MSS), NoDelay: bool(p.NoDelay), Congestion: p.Congestion, TOS: int(p.TOS), DontFragment: p.DontFragment != 0, MPTCP: bool(p.MPTCP), ReadLen: sc.ReadLen, DisableFastPath: sc.DisableFastPath, StreamThreads: sc.StreamThreads, JitterClock: sc.JitterClock, FlowLabel: int(p.FlowLabel)},
	}
	if a := p.ServerAffinity; a != nil {
		c.ServerAffinity = new(int(*a))
	}
	if b := int(p.Burst); b > 0 && b <= maxBurst {
		c.Burst = b
	}
	c.dataPathFromParams(p)
	if c.ReceiveTo != nil {
		c.SkipRxCopy = false // the server's sink wants the data
	}
	if c.BlockLen == 0 && !c.UDP {
		c.BlockLen = iperfTCPBlockLen // a stock client always sends len; iperf3's default otherwise
	}
	if c.Bitrate == 0 {
		c.Bitrate = Unlimited // the client sends its default rate; 0 is -b 0
	}
	// A netperfkit client's interval wins, except where a total rate limit
	// is policed: its window is cut from the server's own intervals, as
	// 3.21's (which takes no interval from its client), or a client could
	// stretch the window past its test.
	if p.Interval >= 0.1 && p.Interval <= 60 && sc.MaxTotalBitrate == 0 {
		c.Interval = time.Duration(p.Interval * float64(time.Second))
	}
	// The client ends the test; a server-side duration of 0 stays 0.
	d := c.withDefaults()
	d.Duration = c.Duration
	return d
}
