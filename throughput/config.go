package throughput

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"time"

	"github.com/netperfkit/netperfkit/internal/flowmodel"
	"github.com/netperfkit/netperfkit/internal/iperfwire"
)

// Unlimited as Config.Bitrate asks for no rate limit (iperf3's -b 0).
const Unlimited = -1

// defaultPort is iperf3's default port, Run's and ListenAndServe's when
// the address has none.
const defaultPort = 5201

// maxStreams is iperf3's limit on parallel streams (per direction).
const maxStreams = 128

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

// maxFlowLabel is the largest IPv6 flow label (20 bits).
const maxFlowLabel = 0xfffff

// maxAffinity is iperf3's bound on a CPU number (-A and server_affinity).
const maxAffinity = 1024

// authClockKey carries the clock of Auth's token in a Run's context, a
// test seam: without it the token carries time.Now.
type authClockKey struct{}

// authClock is the time Auth's token carries.
func authClock(ctx context.Context) time.Time {
	if now, ok := ctx.Value(authClockKey{}).(func() time.Time); ok {
		return now()
	}
	return time.Now()
}

// useGSO reports whether UDP senders try GSO.
func useGSO(c *Config) bool { return !c.DisableFastPath && !flowmodel.Off(c.GSO) }

// useGRO reports whether UDP receivers try GRO: when asked to, and by
// default only without a target rate.
func useGRO(c *Config) bool {
	switch {
	case c.DisableFastPath || flowmodel.Off(c.GRO):
		return false
	case flowmodel.On(c.GRO):
		return true
	}
	return rate(c) == 0
}

// pacingRate is the SO_MAX_PACING_RATE for the data sockets, in bits/s
// (0: leave it): FQRate, or a paced UDP stream's target rate.
func pacingRate(c *Config) float64 {
	if c.FQRate > 0 {
		return c.FQRate
	}
	if c.UDP {
		return rate(c)
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
func dataPathParams(c *Config, p *iperfwire.Params) {
	flag := func(b bool) *iperfwire.Int {
		if b {
			return iperfwire.PtrInt(1)
		}
		return iperfwire.PtrInt(0)
	}
	if c.UDP {
		gso := flowmodel.On(c.GSO) && useGSO(c)
		p.GSO, p.GRO = flag(gso), flag(flowmodel.On(c.GRO) && useGRO(c))
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
// choice to this side, as a Config's nil GSO and GRO do: they change how
// this side writes and reads, not the datagrams on the wire.
func dataPathFromParams(c *Config, p *iperfwire.Params) {
	on := func(v *iperfwire.Int) *bool {
		if v != nil && *v > 0 {
			return new(true)
		}
		return nil
	}
	c.GSO, c.GRO = on(p.GSO), on(p.GRO)
	c.SkipRxCopy, c.ZeroCopy = p.SkipRxCopy != 0, p.ZeroCopy != 0
	c.FQRate = float64(max(p.FQRate, 0))
}

func withDefaults(c *Config) Config {
	var d Config
	if c != nil {
		d = *c
	}
	if d.Streams == 0 {
		d.Streams = 1
	}
	if d.Duration == 0 && d.Bytes == 0 && d.Blocks == 0 && !untilSent(&d) {
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

func validate(c *Config) error {
	if err := validateSizes(c); err != nil {
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
	case c.ClientPort > 0 && c.ClientPort+len(sends(c, false))-1 > 65535:
		return fmt.Errorf("throughput: Config.ClientPort %d: its %d streams take ports past 65535", c.ClientPort, len(sends(c, false)))
	case c.BindAddr != "" && net.ParseIP(c.BindAddr) == nil:
		return fmt.Errorf("throughput: Config.BindAddr %q is not an IP address", c.BindAddr)
	case c.BindDevice != "" && !bindDeviceAvailable:
		return fmt.Errorf("throughput: Config.BindDevice: %w", errNotAvailable)
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
	if pj, err := json.Marshal(params(c)); err == nil {
		if err := paramsFit(c, len(pj)); err != nil {
			return err
		}
	}
	return validateAuth(c.Auth)
}

// validateSizes checks every size and rate a Config carries against
// iperf3's limits, naming the field and its unit.
func validateSizes(c *Config) error {
	udpMin, udpMax := iperfwire.MinUDPLen, iperfwire.MaxUDPLen
	switch {
	case c.Streams < 1 || c.Streams > maxStreams:
		return fmt.Errorf("throughput: Config.Streams %d outside 1..%d", c.Streams, maxStreams)
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
func paramsFit(c *Config, n int) error {
	if n <= maxParamsBytes {
		return nil
	}
	return fmt.Errorf("throughput: Config.Title (%d bytes) and Config.ExtraData (%d bytes) make parameters of %d bytes, above iperf3's limit of %d bytes",
		len(c.Title), len(c.ExtraData), n, maxParamsBytes)
}

// untilSent reports whether the client's test lasts, unless told
// otherwise, until its SendFrom data is sent: it has a source and sends.
func untilSent(c *Config) bool { return c.SendFrom != nil && (!c.Reverse || c.Bidir) }

// withoutHooks is c as Result.Config reports it: without callbacks,
// credentials and data sources and sinks.
func withoutHooks(p *Config) Config {
	c := *p
	c.OnInterval, c.OnEvent, c.Auth, c.SendFrom, c.ReceiveTo = nil, nil, nil, nil, nil
	return c
}

// rate is the per-stream target in bits/s, 0 when unlimited.
func rate(c *Config) float64 {
	if c.Bitrate > 0 {
		return c.Bitrate
	}
	return 0
}

// counters64 reports whether UDP datagrams carry 64-bit counters.
func counters64(c *Config) bool { return !c.UDP32BitCounters }

// sends lists, in iperf3's stream order, whether this side sends on each
// stream. The client opens its senders first with --bidir, and the server
// sees them first, as its receivers.
func sends(c *Config, server bool) []bool {
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
func params(c *Config) *iperfwire.Params {
	w := func(v int64) iperfwire.Int { return iperfwire.Int(v) }
	p := &iperfwire.Params{
		Omit: w(int64(c.Omit / time.Second)), Time: w(int64(c.Duration / time.Second)),
		Num: w(c.Bytes), BlockCount: w(c.Blocks), Parallel: w(int64(c.Streams)),
		Len: w(int64(c.BlockLen)), Bandwidth: w(int64(rate(c))), MSS: w(int64(c.MSS)),
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
		if rate(c) > 0 {
			p.PacingTimer = 1000
		}
		if counters64(c) {
			p.UDPCounters64 = 1
		}
	} else {
		p.TCP = true
	}
	dataPathParams(c, p)
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
		UDP:         bool(p.UDP),
		Streams:     int(p.Parallel),
		Duration:    time.Duration(p.Time) * time.Second,
		Omit:        time.Duration(p.Omit) * time.Second,
		Bytes:       int64(p.Num),
		Blocks:      int64(p.BlockCount),
		Reverse:     bool(p.Reverse),
		Bidir:       bool(p.Bidirectional),
		BlockLen:    int(p.Len),
		Bitrate:     float64(p.Bandwidth),
		UDPKeepRate: bool(p.KeepRate),
		Interval:    sc.Interval,
		IOTimeout:   sc.IOTimeout,
		RecvTimeout: sc.RecvTimeout,
		SendFrom:    sc.SendFrom,
		ReceiveTo:   sc.ReceiveTo,
		Title:       p.Title, ExtraData: p.ExtraData, RepeatingPayload: p.RepeatingPayload != 0, GetServerOutput: p.GetServerOutput != 0, UDP32BitCounters: p.UDPCounters64 == 0,
		SocketOptions: SocketOptions{Window: int(p.Window), MSS: int(p.MSS), NoDelay: bool(p.NoDelay), Congestion: p.Congestion, TOS: int(p.TOS), DontFragment: p.DontFragment != 0, MPTCP: bool(p.MPTCP), ReadLen: sc.ReadLen, DisableFastPath: sc.DisableFastPath, StreamThreads: sc.StreamThreads, JitterRead: sc.JitterRead, FlowLabel: int(p.FlowLabel)},
	}
	if a := p.ServerAffinity; a != nil {
		c.ServerAffinity = new(int(*a))
	}
	if b := int(p.Burst); b > 0 && b <= maxBurst {
		c.Burst = b
	}
	dataPathFromParams(&c, p)
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
	d := withDefaults(&c)
	d.Duration = c.Duration
	return d
}
