package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/netperfkit/netperfkit/latency"
	"github.com/netperfkit/netperfkit/throughput"
	"github.com/netperfkit/netperfkit/throughput/iperf3auth"
)

// iperf3 3.21's limits on option values (src/iperf.h, iperf_api.h).
const (
	minInterval      = 0.1
	maxInterval      = 60.0
	maxTime          = 86400
	maxOmit          = 600
	maxBurst         = 1000
	maxMSS           = 32*1024 - 1
	maxTCPBuffer     = 512 << 20
	maxBlockSize     = 1 << 20
	minUDPBlockSize  = 16
	maxUDPBlockSize  = 65535 - 8 - 20
	minRcvTimeoutMs  = 100
	defaultTimestamp = "%c "
	iperfUDPBitrate  = 1 << 20   // iperf3's default UDP rate, 1 Mbit/s as 1024*1024
	iperfTCPBlockLen = 128 << 10 // iperf3's default TCP write length
	iperfMaxStreams  = 128       // iperf3's MAX_STREAMS, as throughput.Config.Streams allows
	iperfDefaultPort = 5201      // iperf3's default port, as throughput.Run's
	// wholeTest is -i 0's interval: longer than any test (-t at most a
	// day, -n and -k bounded by a server's duration cap).
	wholeTest = 365 * 24 * time.Hour
)

// options is the whole command line, parsed and validated as iperf3 3.21
// does.
type options struct {
	server, client bool
	host           string // -c
	port           int
	inProcess      bool // --in-process: ours, a loopback test against an in-process server
	streamThreads  bool // --stream-threads: ours, Config.StreamThreads for both roles
	jitterRead     bool // --jitter-clock read: ours, Config.JitterRead for both roles
	keepRate       bool // --keep-rate: ours, Config.UDPKeepRate (client)

	// Output.
	format      byte // -f: 0 means adaptive
	verbose     bool
	json        bool
	jsonStream  bool
	logfile     string
	forceFlush  bool
	timestamps  string // strftime format; "" = off
	title       string
	help        bool
	showVersion bool

	// Client settings that map onto throughput.Config (cfg), and the
	// parsed values the library does not take yet.
	cfg              throughput.Config
	timeSet          bool // -t given
	blockLenSet      bool // -l given
	rateSet          bool // -b given
	burst            int
	extraData        string
	bind             string
	ipv4, ipv6       bool
	cport            int
	tos              int // -1 when unset
	zerocopy         bool
	skipRxCopy       bool
	gsro             bool
	fqRate           float64
	pacingTimer      int64
	connectTimeout   time.Duration
	rcvTimeout       time.Duration
	sndTimeout       time.Duration
	udp64            bool
	repeatingPayload bool
	dontFragment     bool
	rtt              string
	rttResult        *latency.PingPongResult // what --rtt measured

	// Server.
	oneOff            bool
	idleTimeout       time.Duration
	serverMaxDuration time.Duration
	allowedClients    []netip.Prefix // --allowed-clients (ours)
	maxTestsPerClient int            // --max-tests-per-client (ours)

	// Authentication.
	username            string
	rsaPublicKeyPath    string
	rsaPrivateKeyPath   string
	authorizedUsersPath string
	skewThreshold       time.Duration
	usePKCS1Padding     bool
	serverAuth          *iperf3auth.Server // loaded by loadAuth

	// 3.21's options that came with its later releases.
	compat
	noIntervals bool // -i 0: one interval line for the whole test, as 3.21
}

// paramError is iperf3's "parameter error - ..." (a value it refuses).
type paramError struct{ msg string }

func (e *paramError) Error() string { return "parameter error - " + e.msg }

// optionError is a getopt complaint (unknown option, missing argument),
// printed as getopt_long prints it.
type optionError struct{ msg string }

func (e *optionError) Error() string { return e.msg }

func perr(format string, a ...any) error { return &paramError{msg: fmt.Sprintf(format, a...)} }

// iperf3's messages for the values it refuses (src/iperf_error.c).
var (
	errPort       = perr("port number must be between 1 and 65535 inclusive")
	errFormat     = perr("bad format specifier (valid formats are in the set [kmgtKMGT])")
	errInterval   = perr("invalid report interval (min = %g, max = %g seconds)", minInterval, maxInterval)
	errServClient = perr("cannot be both server and client")
	errBurst      = perr("invalid burst count (maximum = %d)", maxBurst)
	errDuration   = perr("test duration valid values are 0 to %d seconds", maxTime)
	errStreams    = perr("invalid number of parallel streams (min = 1, max = %d)", iperfMaxStreams)
	errRevBidir   = perr("cannot be both reverse and bidirectional")
	errBufSize    = perr("socket buffer size too large (maximum = %d bytes)", maxTCPBuffer)
	errMSS        = perr("TCP MSS too large (maximum = %d bytes)", maxMSS)
	errTOS        = perr("bad TOS value (must be between 0 and 255 inclusive)")
	errDSCP       = perr("bad DSCP value (numeric: 0-63 inclusive, symbolic: one of [af11-13, af21-23, af31-33, af41-43, cs1-7, ef, va, lowdelay, throughput, reliability])")
	errOmit       = perr("bogus value for --omit (maximum = %d seconds)", maxOmit)
	errIdle       = perr("idle timeout parameter is not positive or larger than allowed limit")
	// 3.21 appends ": " and strerror(errno) to these two; errno is 0
	// while parsing, and its strerror prints nothing there.
	errRcvTimeout  = perr("receive timeout value is incorrect or not in range: ")
	errSndTimeout  = perr("send timeout value is incorrect or not in range")
	errSkew        = perr("skew threshold must be a positive number")
	errBlockSize   = perr("block size too large (maximum = %d bytes)", maxBlockSize)
	errUDPBlock    = perr("block size invalid (minimum = %d bytes, maximum = %d bytes)", minUDPBlockSize, maxUDPBlockSize)
	errEndCond     = perr("only one test end condition (-t, -n, -k) may be specified")
	errNoRole      = perr("must either be a client (-c) or server (-s)")
	errServerOnly  = perr("some option you are trying to set is server only")
	errClientOnly  = perr("some option you are trying to set is client only")
	errClientAuth  = perr("you must specify a username, password, and path to a valid RSA public key")
	errServerAuth  = perr("you must specify a path to a valid RSA private key and a user credential file")
	errRcvOnlyRecv = perr("client receive timeout is valid only in receiving mode: ")
)

func errUnit(s string) error { return perr("invalid unit value or suffix: '%s'", s) }

// clientOnly and serverOnly are the long names iperf3 marks with
// client_flag and server_flag: giving one in the other role is an error.
var (
	clientOnly = []string{"udp", "bitrate", "bandwidth", "time", "bytes", "blockcount", "length", "parallel", "reverse", "bidir",
		"window", "set-mss", "no-delay", "tos", "dscp", "extra-data", "zerocopy", "repeating-payload", "omit", "title",
		"congestion", "get-server-output", "udp-counters-64bit", "fq-rate", "dont-fragment", "skip-rx-copy",
		"pacing-timer", "connect-timeout", "username", "rsa-public-key-path", "gsro", "rtt", "flowlabel", "no-fq-socket-pacing", "keep-rate"}
	serverOnly = []string{"one-off", "idle-timeout", "server-max-duration", "rsa-private-key-path", "time-skew-threshold", "use-pkcs1-padding",
		"allowed-clients", "max-tests-per-client", "daemon", "server-bitrate-limit", "max-tests"}
)

// parseOptions parses args (without the program name) as iperf3 3.21 does.
// Errors are *paramError or *optionError; the caller prints them with the
// usage lines and exits 1.
func parseOptions(args []string) (*options, error) {
	o := &options{port: iperfDefaultPort, tos: -1}
	o.cfg.Duration = 10 * time.Second
	fs := newFlagSet(o)
	if err := fs.Parse(args); err != nil {
		return nil, translate(err)
	}
	if o.help || o.showVersion {
		return o, nil
	}
	// iperf3 ignores operands after the options; so does this tool.
	if err := o.finish(fs); err != nil {
		return nil, err
	}
	return o, nil
}

// newFlagSet defines every option on o.
func newFlagSet(o *options) *pflag.FlagSet {
	fs := pflag.NewFlagSet("iperf3", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.SortFlags = false
	defineCommon(fs, o)
	defineOutput(fs, o)
	defineClient(fs, o)
	defineServerAndAuth(fs, o)
	define321(fs, o)
	return fs
}

func defineCommon(fs *pflag.FlagSet, o *options) {
	fs.FuncP("port", "p", "server port to listen on/connect to", func(s string) error {
		p, err := strconv.Atoi(s)
		if err != nil || p < 1 || p > 65535 {
			return errPort
		}
		o.port = p
		return nil
	})
	fs.FuncP("format", "f", "format to report: Kbits, Mbits, Gbits, Tbits", func(s string) error {
		if len(s) == 0 || !strings.ContainsRune("kmgtKMGT", rune(s[0])) {
			return errFormat
		}
		o.format = s[0]
		return nil
	})
	fs.FuncP("interval", "i", "seconds between periodic throughput reports", func(s string) error {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || (v != 0 && (v < minInterval || v > maxInterval)) {
			return errInterval
		}
		o.cfg.Interval, o.noIntervals = time.Duration(v*float64(time.Second)), v == 0
		if v == 0 {
			// 3.21 reports the whole test as one interval at its end:
			// an interval longer than any test gives the same line.
			o.cfg.Interval = wholeTest
		}
		return nil
	})
	fs.BoolFuncP("server", "s", "run in server mode", func(string) error {
		if o.client {
			return errServClient
		}
		o.server = true
		return nil
	})
	fs.FuncP("client", "c", "run in client mode, connecting to <host>", func(s string) error {
		if o.server {
			return errServClient
		}
		o.client = true
		var dev string
		if o.host, dev = splitDevice(s); dev != "" {
			o.compat.bindDev = dev
		}
		return nil
	})
	fs.FuncP("bind", "B", "bind to the interface associated with the address <host>", func(s string) error {
		var dev string
		if o.bind, dev = splitDevice(s); dev != "" {
			o.compat.bindDev = dev
		}
		return nil
	})
	fs.BoolVarP(&o.ipv4, "version4", "4", false, "only use IPv4")
	fs.BoolVarP(&o.ipv6, "version6", "6", false, "only use IPv6")
	fs.Func("rcv-timeout", "idle timeout for receiving data (default 120000 ms)", func(s string) error {
		v, err := strconv.Atoi(s)
		if err != nil || v < minRcvTimeoutMs || v > maxTime*1000 {
			return errRcvTimeout
		}
		o.rcvTimeout = time.Duration(v) * time.Millisecond
		return nil
	})
	fs.Func("snd-timeout", "timeout for unacknowledged TCP data (in ms)", func(s string) error {
		v, err := strconv.Atoi(s)
		if err != nil || v < 0 || v > maxTime*1000 {
			return errSndTimeout
		}
		o.sndTimeout = time.Duration(v) * time.Millisecond
		return nil
	})
	defineOurs(fs, o)
}

// defineOurs defines netperfkit's own options for both roles.
func defineOurs(fs *pflag.FlagSet, o *options) {
	fs.BoolVar(&o.inProcess, "in-process", false, "run the test against an in-process server on loopback (netperfkit)")
	fs.BoolVar(&o.streamThreads, "stream-threads", true,
		"send and receive each TCP stream on its own OS thread, as iperf3 3.21 does; =false uses the Go poller (linux) (netperfkit)")
	fs.Func("jitter-clock", "UDP arrival times for the jitter: kernel (the path's, default) or read (iperf3's) (netperfkit)", func(s string) error {
		switch s {
		case "kernel", "read":
			o.jitterRead = s == "read"
			return nil
		}
		return fmt.Errorf("jitter clock %q: want kernel or read", s)
	})
	fs.BoolVar(&o.keepRate, "keep-rate", false,
		"UDP: drop what this host's own queue refuses and keep offering the target rate, counting the drops (default: wait for the queue, as iperf3) (netperfkit)")
}

// defineOutput defines the options that shape what is written and where.
func defineOutput(fs *pflag.FlagSet, o *options) {
	fs.BoolVarP(&o.verbose, "verbose", "V", false, "more detailed output")
	fs.BoolVarP(&o.json, "json", "J", false, "output in JSON format")
	fs.BoolFunc("json-stream", "output in line-delimited JSON format", func(string) error {
		o.json, o.jsonStream = true, true
		return nil
	})
	fs.StringVar(&o.logfile, "logfile", "", "send output to a log file")
	fs.BoolVar(&o.forceFlush, "forceflush", false, "force flushing output at every interval")
	fs.Func("timestamps", "emit a timestamp at the start of each output line", func(s string) error {
		o.timestamps = s
		return nil
	})
	fs.Lookup("timestamps").NoOptDefVal = defaultTimestamp
	fs.BoolVarP(&o.showVersion, "version", "v", false, "show version information and quit")
	fs.BoolVarP(&o.help, "help", "h", false, "show this message and quit")
}

func defineClient(fs *pflag.FlagSet, o *options) {
	c := &o.cfg
	fs.BoolVarP(&c.UDP, "udp", "u", false, "use UDP rather than TCP")
	bitrate := func(s string) error { return o.setBitrate(s) }
	fs.FuncP("bitrate", "b", "target bitrate in bits/sec (0 for unlimited)", bitrate)
	fs.Func("bandwidth", "same as --bitrate", bitrate)
	fs.FuncP("time", "t", "time in seconds to transmit for (default 10 secs)", func(s string) error {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || v < 0 || v > maxTime {
			return errDuration
		}
		c.Duration, o.timeSet = time.Duration(v*float64(time.Second)), true
		return nil
	})
	fs.FuncP("bytes", "n", "number of bytes to transmit (instead of -t or -k)", func(s string) error {
		v, err := unitSize(s, 1024)
		c.Bytes = int64(v)
		return err
	})
	fs.FuncP("blockcount", "k", "number of blocks to transmit (instead of -t or -n)", func(s string) error {
		v, err := unitSize(s, 1024)
		c.Blocks = int64(v)
		return err
	})
	fs.FuncP("length", "l", "length of buffer to read or write", func(s string) error {
		v, err := unitSize(s, 1024)
		c.BlockLen, o.blockLenSet = int(v), true
		return err
	})
	fs.IntVar(&o.cport, "cport", 0, "bind to a specific client port")
	fs.FuncP("parallel", "P", "number of parallel client streams to run", func(s string) error {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 || v > iperfMaxStreams {
			return errStreams
		}
		c.Streams = v
		return nil
	})
	fs.BoolFuncP("reverse", "R", "run in reverse mode (server sends, client receives)", func(string) error {
		if c.Bidir {
			return errRevBidir
		}
		c.Reverse = true
		return nil
	})
	fs.BoolFunc("bidir", "run in bidirectional mode", func(string) error {
		if c.Reverse {
			return errRevBidir
		}
		c.Bidir = true
		return nil
	})
	fs.FuncP("omit", "O", "perform pre-test for N seconds and omit the pre-test statistics", func(s string) error {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || v < 0 || v > maxOmit {
			return errOmit
		}
		c.Omit = time.Duration(v * float64(time.Second))
		return nil
	})
	defineClientSocket(fs, o)
	defineClientExtras(fs, o)
}

// defineClientSocket defines the client options that tune the sockets.
func defineClientSocket(fs *pflag.FlagSet, o *options) {
	c := &o.cfg
	fs.FuncP("window", "w", "set send/receive socket buffer sizes", func(s string) error {
		v, err := unitSize(s, 1024)
		if err != nil {
			return err
		}
		if v < 0 || v > maxTCPBuffer {
			return errBufSize
		}
		c.Window = int(v)
		return nil
	})
	fs.StringVarP(&c.Congestion, "congestion", "C", "", "set TCP congestion control algorithm")
	fs.String("linux-congestion", "", "same as --congestion")
	fs.FuncP("set-mss", "M", "set TCP maximum segment size", func(s string) error {
		v, err := strconv.Atoi(s)
		if err != nil || v < 0 || v > maxMSS {
			return errMSS
		}
		c.MSS = v
		return nil
	})
	fs.BoolVarP(&c.NoDelay, "no-delay", "N", false, "set TCP no delay, disabling Nagle's Algorithm")
	fs.FuncP("tos", "S", "set the IP type of service, 0-255", func(s string) error {
		v, err := strconv.ParseInt(s, 0, 64)
		if err != nil || v < 0 || v > 255 {
			return errTOS
		}
		o.tos = int(v)
		return nil
	})
	fs.Func("dscp", "set the IP dscp value, either 0-63 or symbolic", func(s string) error {
		v, ok := parseDSCP(s)
		if !ok {
			return errDSCP
		}
		o.tos = v
		return nil
	})
	fs.BoolVarP(&o.zerocopy, "zerocopy", "Z", false, "use a 'zero copy' method of sending data")
	fs.BoolVar(&o.skipRxCopy, "skip-rx-copy", false, "ignore received messages using MSG_TRUNC option")
}

// defineClientExtras defines the remaining client options.
func defineClientExtras(fs *pflag.FlagSet, o *options) {
	c := &o.cfg
	fs.StringVarP(&o.title, "title", "T", "", "prefix every output line with this string")
	fs.StringVar(&o.extraData, "extra-data", "", "data string to include in client and server JSON")
	fs.BoolVar(&c.GetServerOutput, "get-server-output", false, "get results from server")
	fs.BoolVar(&o.udp64, "udp-counters-64bit", false, "use 64-bit counters in UDP test packets")
	fs.BoolVar(&o.gsro, "gsro", false, "enable UDP GSO/GRO on both client and server")
	fs.BoolVar(&o.repeatingPayload, "repeating-payload", false, "use repeating pattern in payload")
	fs.BoolVar(&o.dontFragment, "dont-fragment", false, "set IPv4 Don't Fragment flag")
	fs.Func("fq-rate", "enable fair-queuing based socket pacing in bits/sec", func(s string) error {
		v, err := unitRate(s)
		o.fqRate = v
		return err
	})
	fs.Func("pacing-timer", "set the Server timing for pacing, in microseconds", func(s string) error {
		v, err := unitSize(s, 1024)
		o.pacingTimer = int64(v)
		return err
	})
	fs.Func("connect-timeout", "timeout for control connection setup (ms)", func(s string) error {
		v, err := unitSize(s, 1024)
		o.connectTimeout = time.Duration(v) * time.Millisecond
		return err
	})
	fs.StringVar(&o.rtt, "rtt", "", "measure RTT under load against a sockperf-compatible UDP echo server at host:port (\"local\" with --in-process) (netperfkit)")
}

func defineServerAndAuth(fs *pflag.FlagSet, o *options) {
	fs.BoolVarP(&o.oneOff, "one-off", "1", false, "handle one client connection then exit")
	fs.Func("idle-timeout", "restart idle server after # seconds", func(s string) error {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 || v > maxTime {
			return errIdle
		}
		o.idleTimeout = time.Duration(v) * time.Second
		return nil
	})
	fs.Func("server-max-duration", "max time, in seconds, that an iperf test can run against the server", func(s string) error {
		v, err := strconv.Atoi(s)
		if err != nil || v < 0 || v > maxTime {
			return errDuration
		}
		o.serverMaxDuration = time.Duration(v) * time.Second
		return nil
	})
	fs.Func("allowed-clients", "serve only clients in these networks, CIDR[,CIDR...] (netperfkit)", func(s string) error {
		for _, f := range strings.Split(s, ",") {
			p, err := netip.ParsePrefix(strings.TrimSpace(f))
			if err != nil {
				a, aerr := netip.ParseAddr(strings.TrimSpace(f))
				if aerr != nil {
					return perr("bad --allowed-clients network %q (want CIDR, e.g. 10.0.0.0/8)", f)
				}
				p = netip.PrefixFrom(a, a.BitLen())
			}
			o.allowedClients = append(o.allowedClients, p.Masked())
		}
		return nil
	})
	fs.Func("max-tests-per-client", "most tests one client IP may run at once, counted from accept (netperfkit)", func(s string) error {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			return perr("--max-tests-per-client must be a positive number")
		}
		o.maxTestsPerClient = v
		return nil
	})
	fs.StringVar(&o.username, "username", "", "username for authentication")
	fs.StringVar(&o.rsaPublicKeyPath, "rsa-public-key-path", "", "path to the RSA public key used to encrypt authentication credentials")
	fs.StringVar(&o.rsaPrivateKeyPath, "rsa-private-key-path", "", "path to the RSA private key used to decrypt authentication credentials")
	fs.StringVar(&o.authorizedUsersPath, "authorized-users-path", "", "path to the configuration file containing user credentials")
	fs.Func("time-skew-threshold", "time skew threshold (in seconds) between the server and client", func(s string) error {
		v, err := strconv.Atoi(s)
		if err != nil || v <= 0 {
			return errSkew
		}
		o.skewThreshold = time.Duration(v) * time.Second
		return nil
	})
	fs.BoolVar(&o.usePKCS1Padding, "use-pkcs1-padding", false, "use pkcs1 padding at your own risk")
}

// setBitrate reads -b "#[KMGT][/burst]" with decimal units.
func (o *options) setBitrate(s string) error {
	if rate, burst, ok := strings.Cut(s, "/"); ok {
		b, err := strconv.Atoi(burst)
		if err != nil || b <= 0 || b > maxBurst {
			return errBurst
		}
		o.burst, s = b, rate
	}
	v, err := unitRate(s)
	if err != nil {
		return err
	}
	o.cfg.Bitrate, o.rateSet = v, true
	if v == 0 {
		o.cfg.Bitrate = throughput.Unlimited
	}
	return nil
}

// finish applies iperf3's checks that span options and its defaults.
func (o *options) finish(fs *pflag.FlagSet) error {
	if fs.Changed("linux-congestion") && !fs.Changed("congestion") {
		o.cfg.Congestion, _ = fs.GetString("linux-congestion")
	}
	if o.client {
		if err := changedAny(fs, serverOnly, errServerOnly); err != nil {
			return err
		}
	}
	if o.server {
		if err := changedAny(fs, clientOnly, errClientOnly); err != nil {
			return err
		}
	}
	if err := o.checkAuth(); err != nil {
		return err
	}
	if err := o.checkBlockLen(); err != nil {
		return err
	}
	if err := o.finish321(fs); err != nil {
		return err
	}
	c := &o.cfg
	if !o.rateSet && c.UDP {
		c.Bitrate = iperfUDPBitrate
	}
	if (o.timeSet && c.Bytes != 0) || (o.timeSet && c.Blocks != 0) || (c.Bytes != 0 && c.Blocks != 0) {
		return errEndCond
	}
	if (c.Bytes != 0 || c.Blocks != 0) && !o.timeSet {
		c.Duration = 0
	}
	if !o.server && !o.client && !o.inProcess {
		return errNoRole
	}
	if o.client && fs.Changed("rcv-timeout") && !c.Reverse && !c.Bidir {
		return errRcvOnlyRecv
	}
	if c.Streams == 0 {
		c.Streams = 1
	}
	// iperf3 uses 32-bit UDP counters unless asked for 64-bit ones.
	c.UDP32BitCounters = !o.udp64
	c.Title = o.title
	c.ConnectTimeout = o.connectTimeout
	c.ClientPort = o.cport
	if o.tos > 0 {
		c.TOS = o.tos
	}
	c.DontFragment, c.SendTimeout = o.dontFragment, o.sndTimeout
	c.Burst, c.RecvTimeout = o.burst, o.rcvTimeout
	c.ExtraData, c.RepeatingPayload = o.extraData, o.repeatingPayload
	if o.client {
		c.BindAddr = o.bind
	}
	return nil
}

func (o *options) checkAuth() error {
	anyClient := o.username != "" || o.rsaPublicKeyPath != ""
	anyServer := o.rsaPrivateKeyPath != "" || o.authorizedUsersPath != ""
	switch {
	case o.server && anyClient:
		return errClientOnly
	case o.client && anyClient && (o.username == "" || o.rsaPublicKeyPath == ""):
		return errClientAuth
	case o.client && (anyServer || o.skewThreshold != 0):
		return errServerOnly
	case o.server && anyServer && (o.rsaPrivateKeyPath == "" || o.authorizedUsersPath == ""):
		return errServerAuth
	}
	return nil
}

func (o *options) checkBlockLen() error {
	c := &o.cfg
	if !o.blockLenSet || c.BlockLen == 0 {
		// -l 0 is 3.21's default too: 128 KiB for TCP, dynamic for UDP.
		if !c.UDP {
			// iperf3's default TCP length, not the library's larger one.
			c.BlockLen = iperfTCPBlockLen
		}
		return nil
	}
	if (!c.UDP && c.BlockLen <= 0) || c.BlockLen > maxBlockSize {
		return errBlockSize
	}
	if c.UDP && c.BlockLen > 0 && (c.BlockLen < minUDPBlockSize || c.BlockLen > maxUDPBlockSize) {
		return errUDPBlock
	}
	return nil
}

func changedAny(fs *pflag.FlagSet, names []string, err error) error {
	for _, n := range names {
		if fs.Changed(n) {
			return err
		}
	}
	return nil
}

// unitSize reads iperf3's unit_atoi/unit_atof: a number and an optional
// k/m/g/t suffix (either case) in powers of base; text after the suffix
// is ignored, as sscanf("%lf%c") ignores it.
func unitSize(s string, base float64) (float64, error) {
	num, suffix := splitNumber(s)
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, errUnit(s)
	}
	if suffix == "" {
		return v, nil
	}
	exp := strings.IndexByte("kmgt", lower(suffix[0])) + 1
	if exp == 0 {
		return 0, errUnit(s)
	}
	return v * math.Pow(base, float64(exp)), nil
}

func unitRate(s string) (float64, error) { return unitSize(s, 1000) }

func lower(b byte) byte {
	if b >= 'A' && b <= 'Z' {
		return b + 'a' - 'A'
	}
	return b
}

// splitNumber cuts s after its leading decimal number.
func splitNumber(s string) (num, rest string) {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
		i++
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') && i+1 < len(s) && (s[i+1] >= '0' && s[i+1] <= '9' || s[i+1] == '-' || s[i+1] == '+') {
		i += 2
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	}
	return s[:i], s[i:]
}

// dscpTOS are the symbolic --dscp values iperf3 accepts (src/dscp.c), as
// the TOS byte they set (the DSCP shifted left by two; the last three are
// the old RFC 1349 TOS bits).
var dscpTOS = map[string]int{
	"af11": 10 << 2, "af12": 12 << 2, "af13": 14 << 2, "af21": 18 << 2, "af22": 20 << 2, "af23": 22 << 2,
	"af31": 26 << 2, "af32": 28 << 2, "af33": 30 << 2, "af41": 34 << 2, "af42": 36 << 2, "af43": 38 << 2,
	"cs0": 0, "cs1": 8 << 2, "cs2": 16 << 2, "cs3": 24 << 2, "cs4": 32 << 2, "cs5": 40 << 2, "cs6": 48 << 2, "cs7": 56 << 2,
	"ef": 46 << 2, "va": 44 << 2, "lowdelay": 0x10, "throughput": 0x08, "reliability": 0x04,
}

// parseDSCP returns the TOS byte for a --dscp value.
func parseDSCP(s string) (int, bool) {
	if v, ok := dscpTOS[strings.ToLower(s)]; ok {
		return v, true
	}
	v, err := strconv.ParseInt(s, 0, 64)
	if err != nil || v < 0 || v > 63 {
		return 0, false
	}
	return int(v) << 2, true
}

// translate turns pflag's errors into getopt's words and unwraps ours.
func translate(err error) error {
	var (
		pe  *paramError
		ne  *pflag.NotExistError
		vre *pflag.ValueRequiredError
		se  *pflag.InvalidSyntaxError
	)
	switch {
	case errors.As(err, &pe):
		return pe
	case errors.As(err, &ne):
		if ne.GetSpecifiedShortnames() != "" {
			return &optionError{msg: fmt.Sprintf("invalid option -- '%s'", ne.GetSpecifiedName())}
		}
		return &optionError{msg: fmt.Sprintf("unrecognized option '--%s'", ne.GetSpecifiedName())}
	case errors.As(err, &vre):
		if vre.GetSpecifiedShortnames() != "" {
			return &optionError{msg: fmt.Sprintf("option requires an argument -- '%s'", vre.GetSpecifiedName())}
		}
		return &optionError{msg: fmt.Sprintf("option '--%s' requires an argument", vre.GetSpecifiedName())}
	case errors.As(err, &se):
		return &optionError{msg: fmt.Sprintf("unrecognized option '%s'", se.GetSpecifiedFlag())}
	}
	return &optionError{msg: err.Error()}
}
