package main

import (
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// More of 3.21's limits and messages (src/iperf.h, iperf_error.c).
const (
	maxAffinity  = 1024
	maxFlowLabel = 0xfffff
	debugMax     = 4 // 3.21's DEBUG_LEVEL_MAX: -d without a level
)

// 3.21 appends ": " and an empty strerror to the perr ones while parsing
// (see errRcvTimeout).
var (
	errAffinity    = perr("unable to set CPU affinity: ")
	errFlowLabel   = perr("unable to set IPv6 flow label")
	errCntlKA      = perr("control connection Keepalive period should be larger than the full retry period (interval * count): ")
	errRateWindow  = perr("invalid time interval for calculating average data rate")
	errUDPFile     = perr("cannot transfer file using UDP")
	errBidirFile   = perr("-F cannot be used with --bidir: the receiving stream would truncate the file before it is sent")
	errMaxTests    = perr("--max-tests must be a positive number")
	defaultRateWin = 5 * time.Second // --server-bitrate-limit's averaging window
)

// compat holds 3.21's options that came with its later releases, carried
// out by applyCompat (a client's), listenConfig and serverConfig (a
// server's).
type compat struct {
	pidfile        string // -I
	daemon         bool   // -D
	debug          int    // -d[=level]; 0 = off
	jsonStreamFull bool   // --json-stream-full-output
	affinity       int    // -A n; -1 = unset
	serverAffinity int    // -A n,m: m; -1 = unset
	file           string // -F
	flowLabel      int    // -L
	mptcp          bool   // -m
	bindDev        string // --bind-dev, -B addr%dev, -c host%dev
	cntlKA         bool   // --cntl-ka
	kaIdle         int    // --cntl-ka=idle/intv/cnt, seconds (0: system default)
	kaIntv         int
	kaCount        int
	serverRate     float64       // --server-bitrate-limit, bits/s
	serverRateWin  time.Duration // its averaging window
	maxTests       int           // --max-tests (ours): ServerConfig.MaxTests
	noFQPacing     bool          // --no-fq-socket-pacing
}

// define321 defines the 3.21 options of compat and --max-tests.
func define321(fs *pflag.FlagSet, o *options) {
	c := &o.compat
	c.affinity, c.serverAffinity = -1, -1
	fs.StringVarP(&c.pidfile, "pidfile", "I", "", "write PID file")
	fs.BoolFuncP("daemon", "D", "run the server as a daemon", func(string) error {
		c.daemon = true
		return nil
	})
	fs.FuncP("debug", "d", "emit debugging output", func(s string) error {
		// atoi, as 3.21: text reads as 0 (no output); negative means all.
		v, _ := strconv.Atoi(strings.TrimSpace(s))
		if v < 0 {
			v = debugMax
		}
		c.debug = v
		return nil
	})
	fs.Lookup("debug").NoOptDefVal = strconv.Itoa(debugMax)
	fs.BoolFunc("no-fq-socket-pacing", "deprecated: the same as --fq-rate 0", func(string) error {
		c.noFQPacing = true
		return nil
	})
	fs.BoolVar(&c.jsonStreamFull, "json-stream-full-output", false, "output in JSON format with JSON streams enabled")
	fs.FuncP("affinity", "A", "set CPU affinity core number to n", func(s string) error {
		n, _, ok := strtol(s)
		if !ok || n < 0 || n > maxAffinity {
			return errAffinity
		}
		c.affinity = int(n)
		if _, m, found := strings.Cut(s, ","); found {
			v, _ := strconv.Atoi(leadingInt(m))
			if v < 0 || v > maxAffinity {
				return errAffinity
			}
			c.serverAffinity = v
		}
		return nil
	})
	fs.StringVarP(&c.file, "file", "F", "", "xmit/recv the specified file")
	fs.FuncP("flowlabel", "L", "set the IPv6 flow label", func(s string) error {
		v, _, ok := strtol(s)
		if !ok || v < 1 || v > maxFlowLabel {
			return errFlowLabel
		}
		c.flowLabel = int(v)
		return nil
	})
	defineSockets321(fs, c)
}

// defineSockets321 defines 3.21's socket options: -m, --bind-dev,
// --cntl-ka, and the server's --server-bitrate-limit and --max-tests.
func defineSockets321(fs *pflag.FlagSet, c *compat) {
	fs.BoolVarP(&c.mptcp, "mptcp", "m", false, "use MPTCP rather than plain TCP")
	fs.StringVar(&c.bindDev, "bind-dev", "", "bind to the network interface with SO_BINDTODEVICE")
	fs.Func("cntl-ka", "use control connection TCP keepalive - KEEPIDLE/KEEPINTV/KEEPCNT", func(s string) error {
		c.cntlKA = true
		idle, rest, _ := strings.Cut(s, "/")
		intv, cnt, _ := strings.Cut(rest, "/")
		c.kaIdle, _ = strconv.Atoi(leadingInt(idle))
		c.kaIntv, _ = strconv.Atoi(leadingInt(intv))
		c.kaCount, _ = strconv.Atoi(leadingInt(cnt))
		if c.kaIdle != 0 && c.kaIdle <= c.kaCount*c.kaIntv {
			return errCntlKA
		}
		return nil
	})
	// "/" parses as three defaults, which is what the bare option means.
	fs.Lookup("cntl-ka").NoOptDefVal = "/"
	fs.Func("server-bitrate-limit", "server's total bit rate limit", func(s string) error {
		c.serverRateWin = defaultRateWin
		if rate, win, ok := strings.Cut(s, "/"); ok {
			w, _ := strconv.ParseFloat(leadingFloat(win), 64)
			if w != 0 && (w < minInterval || w > maxInterval) {
				return errRateWindow
			}
			c.serverRateWin, s = time.Duration(w*float64(time.Second)), rate
		}
		v, err := unitRate(s)
		c.serverRate = v
		return err
	})
	fs.Func("max-tests", "most tests the server runs at once (default 4; 1 is iperf3's one at a time) (netperfkit)", func(s string) error {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			return errMaxTests
		}
		c.maxTests = v
		return nil
	})
}

// finish321 applies 3.21's checks on these options once all are parsed.
func (o *options) finish321(fs *pflag.FlagSet) error {
	c := &o.compat
	if c.daemon && o.client {
		return errServerOnly
	}
	if c.serverAffinity >= 0 && o.server {
		return errClientOnly
	}
	if c.file != "" && o.cfg.UDP {
		return errUDPFile
	}
	if c.file != "" && o.cfg.Bidir {
		return errBidirFile
	}
	// As 3.21: -F without an end condition sends the file's size.
	if c.file != "" && !o.server && !o.timeSet && o.cfg.Bytes == 0 && o.cfg.Blocks == 0 {
		if st, err := os.Stat(c.file); err == nil && st.Mode().IsRegular() {
			o.cfg.Bytes, o.cfg.Duration = st.Size(), 0
		}
	}
	if c.maxTests == 0 && fs.Changed("max-tests") {
		return errMaxTests
	}
	return nil
}

// splitDevice splits 3.21's "<host>%<dev>" (iperf_parse_hostname): the
// device is a shorthand for --bind-dev, except after an IPv6 link-local
// literal, where it is the address's zone and stays with it.
func splitDevice(spec string) (host, dev string) {
	h, d, ok := strings.Cut(spec, "%")
	if !ok || h == "" || d == "" {
		return spec, ""
	}
	if ip, err := netip.ParseAddr(h); err == nil && ip.Is6() && ip.IsLinkLocalUnicast() {
		return spec, ""
	}
	// strtok: a second "%" ends the device name.
	d, _, _ = strings.Cut(d, "%")
	return h, d
}

// strtol reads a number as C's strtol(s, &end, 0) does: decimal, 0x hex
// or 0 octal, after optional space and sign; ok is false when no digit was
// read.
func strtol(s string) (v int64, rest string, ok bool) {
	t := strings.TrimLeft(s, " \t\n")
	neg := false
	if t != "" && (t[0] == '+' || t[0] == '-') {
		neg, t = t[0] == '-', t[1:]
	}
	base, digits := 10, "0123456789"
	switch {
	case len(t) > 2 && (t[:2] == "0x" || t[:2] == "0X") && strings.ContainsRune("0123456789abcdefABCDEF", rune(t[2])):
		base, digits, t = 16, "0123456789abcdefABCDEF", t[2:]
	case len(t) > 1 && t[0] == '0':
		base, digits = 8, "01234567"
	}
	i := 0
	for i < len(t) && strings.IndexByte(digits, t[i]) >= 0 {
		i++
	}
	if i == 0 {
		return 0, s, false
	}
	v, err := strconv.ParseInt(t[:i], base, 64)
	if err != nil {
		v = 1 << 62 // out of every range checked here
	}
	if neg {
		v = -v
	}
	return v, t[i:], true
}

// leadingInt is the part of s that atoi reads.
func leadingInt(s string) string {
	s = strings.TrimLeft(s, " \t\n")
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 || (i == 1 && (s[0] == '+' || s[0] == '-')) {
		return "0"
	}
	return s[:i]
}

// leadingFloat is the part of s that atof reads.
func leadingFloat(s string) string {
	num, _ := splitNumber(strings.TrimLeft(s, " \t\n"))
	if num == "" {
		return "0"
	}
	return num
}
