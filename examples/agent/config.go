package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/exporter-toolkit/web"
)

// config is everything the agent is told, by flags or by the JSON file
// named by -config. Flags given on the command line win over the file.
type config struct {
	Metrics      string   `json:"metrics"`
	IperfPort    int      `json:"iperf3_port"`
	SockperfPort int      `json:"sockperf_port"`
	Listen       string   `json:"listen"`
	Peers        []string `json:"peers"`
	PeersFile    string   `json:"peers_file"`
	RTTEvery     duration `json:"rtt_every"`
	RTTCount     int      `json:"rtt_count"`
	TputEvery    duration `json:"tput_every"`
	TputBytes    int64    `json:"tput_bytes"`
	TputDuration duration `json:"tput_duration"`
	TputBudget   int64    `json:"tput_budget_bytes_per_hour"`
	ProbeTimeout duration `json:"probe_timeout"`
	MaxProbes    int      `json:"max_concurrent_probes"`
	Iface        string   `json:"iface"`
	SRDWindow    duration `json:"srd_window"`
	Cache        []string `json:"cache"`
	CacheTLS     bool     `json:"cache_tls"`
	CacheUser    string   `json:"cache_user"`
	CacheCAFile  string   `json:"cache_ca_file"`
	CacheEvery   duration `json:"cache_every"`
	MaxTests     int      `json:"iperf3_max_tests"`
	BitrateLimit float64  `json:"iperf3_bitrate_limit"`
	MaxConns     int      `json:"sockperf_max_conns"`
	LogFormat    string   `json:"log_format"`
	LogLevel     string   `json:"log_level"`

	// Access control of the servers (issue 11).
	AllowClients      []string `json:"allow_clients"`
	MaxTestsPerClient int      `json:"iperf3_max_tests_per_client"`
	IperfKey          string   `json:"iperf3_rsa_private_key"`
	IperfUsers        string   `json:"iperf3_authorized_users"`
	// The agent's own throughput probes authenticate with these
	// (password from $NETPERFKIT_IPERF3_PASSWORD).
	IperfUser      string `json:"iperf3_username"`
	IperfPublicKey string `json:"iperf3_rsa_public_key"`

	// The fleet (issue 33): peers from DNS, the probe topology, starvation.
	PeersDNS      string   `json:"peers_dns"`
	PeersDNSEvery duration `json:"peers_dns_every"`
	Mesh          string   `json:"mesh"`
	MeshExpire    duration `json:"mesh_expire"`
	StarvedWait   duration `json:"starved_wait"`

	// A fleet's series budget and /metrics as exporters serve it (issue 41).
	PeerSeries    int      `json:"peer_series"`
	Zone          string   `json:"zone"`
	Zones         []string `json:"zones"`
	NativeOnly    bool     `json:"native_histograms_only"`
	WebConfigFile string   `json:"web_config_file"`
}

// defaults returns the configuration before the file and the flags.
func defaults() config {
	return config{
		Metrics:           "127.0.0.1:9469",
		IperfPort:         5201,
		SockperfPort:      11111,
		RTTEvery:          duration(10 * time.Second),
		RTTCount:          5,
		TputBytes:         32 << 20,
		TputDuration:      duration(2 * time.Second),
		TputBudget:        1 << 30,
		ProbeTimeout:      duration(5 * time.Second),
		MaxProbes:         4,
		SRDWindow:         duration(60 * time.Second),
		CacheEvery:        duration(30 * time.Second),
		MaxTests:          2,
		MaxConns:          64,
		MaxTestsPerClient: 1,
		LogFormat:         "text",
		LogLevel:          "info",
		Mesh:              meshAuto,
		StarvedWait:       duration(200 * time.Microsecond),
		PeerSeries:        defaultPeerSeries,
	}
}

// duration is a time.Duration that JSON spells "10s".
type duration time.Duration

func (d duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

func (d *duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string such as \"10s\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = duration(v)
	return nil
}

// listFlag is a comma-separated list flag that may be repeated: "-peers a
// -peers b,c" is a, b and c. The first use on the command line replaces the
// list the -config file gave (flags win over the file); later uses append.
type listFlag struct {
	p   *[]string
	set *bool // the flag was given already in this parse
}

func newListFlag(p *[]string) listFlag { return listFlag{p: p, set: new(bool)} }

func (l listFlag) String() string {
	if l.p == nil {
		return ""
	}
	return strings.Join(*l.p, ",")
}

func (l listFlag) Set(s string) error {
	if !*l.set {
		*l.p = nil
		*l.set = true
	}
	*l.p = append(*l.p, splitList(s)...)
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' }) {
		if f != "" {
			out = append(out, f)
		}
	}
	return out
}

// durFlag binds a duration field to a flag.
type durFlag struct{ p *duration }

func (d durFlag) String() string {
	if d.p == nil {
		return ""
	}
	return time.Duration(*d.p).String()
}

func (d durFlag) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d.p = duration(v)
	return nil
}

func newFlagSet(c *config, file *string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(file, "config", "", "read settings from JSON `file` (flags given win)")
	fs.StringVar(&c.Metrics, "metrics", c.Metrics, "serve /metrics on `addr`: host:port, [ipv6]:port, :port (all addresses) or a port alone (the -listen host)")
	fs.IntVar(&c.IperfPort, "iperf3-port", c.IperfPort, "iperf3-compatible server `port` (0: off)")
	fs.IntVar(&c.SockperfPort, "sockperf-port", c.SockperfPort, "sockperf-compatible server `port`, UDP and TCP (0: off)")
	fs.StringVar(&c.Listen, "listen", c.Listen, "`host` the iperf3 and sockperf servers bind (default: all)")
	fs.Var(newListFlag(&c.Peers), "peers", "peers to probe: `host[:iperf3port[:sockperfport]],...` (repeatable)")
	fs.StringVar(&c.PeersFile, "peers-file", c.PeersFile, "read more peers from `file` (one per line, # comments), again on SIGHUP")
	fs.Var(durFlag{&c.RTTEvery}, "rtt-every", "RTT probe `interval` per peer (0: off)")
	fs.IntVar(&c.RTTCount, "rtt-count", c.RTTCount, "UDP ping-pong `messages` per RTT probe; each reply is awaited for an adaptive timeout of at most min(1s, -probe-timeout)")
	fs.Var(durFlag{&c.TputEvery}, "tput-every", "TCP throughput probe `interval` per peer (0: off)")
	fs.Int64Var(&c.TputBytes, "tput-bytes", c.TputBytes, "most `bytes` one throughput probe sends")
	fs.Var(durFlag{&c.TputDuration}, "tput-duration", "longest `time` one throughput probe sends")
	fs.Int64Var(&c.TputBudget, "tput-budget", c.TputBudget, "throughput probe `bytes` allowed per hour, all peers together")
	fs.Var(durFlag{&c.ProbeTimeout}, "probe-timeout", "bound on each RTT or cache probe (throughput: -tput-duration plus this)")
	fs.IntVar(&c.MaxProbes, "max-probes", c.MaxProbes, "probes running at once, all peers together")
	fs.StringVar(&c.Iface, "iface", c.Iface, "interface whose ethtool statistics are exported (default: the default-route interface)")
	fs.Var(durFlag{&c.SRDWindow}, "srd-window", "window of netperfkit_srd_coverage_ratio")
	fs.Var(newListFlag(&c.Cache), "cache", "cache endpoints to probe: `host:port,...` (repeatable)")
	fs.BoolVar(&c.CacheTLS, "cache-tls", c.CacheTLS, "use TLS to the cache endpoints")
	fs.StringVar(&c.CacheCAFile, "cache-ca", c.CacheCAFile, "PEM `file` of the CAs that sign the cache endpoints' certificates (default: system roots)")
	fs.StringVar(&c.CacheUser, "cache-user", c.CacheUser, "ACL `user` for the cache endpoints (password from $NETPERFKIT_CACHE_PASSWORD)")
	fs.Var(durFlag{&c.CacheEvery}, "cache-every", "cache probe `interval` per endpoint")
	fs.IntVar(&c.MaxTests, "iperf3-max-tests", c.MaxTests, "iperf3 tests served at once")
	fs.Float64Var(&c.BitrateLimit, "iperf3-bitrate-limit", c.BitrateLimit, "iperf3 tests' total `bits/s` (iperf3 --server-bitrate-limit, 5 s window; 0: none)")
	fs.IntVar(&c.MaxConns, "sockperf-max-conns", c.MaxConns, "sockperf TCP connections served at once")
	fs.Var(newListFlag(&c.AllowClients), "allow-clients", "serve only clients in these networks, iperf3 and sockperf: `CIDR,...` (repeatable; default: all)")
	fs.IntVar(&c.MaxTestsPerClient, "iperf3-max-tests-per-client", c.MaxTestsPerClient, "iperf3 tests one client IP may run at once, counted from accept (0: no cap)")
	fs.StringVar(&c.IperfKey, "iperf3-rsa-private-key", c.IperfKey, "require iperf3 RSA authentication with this private key PEM `file`")
	fs.StringVar(&c.IperfUsers, "iperf3-authorized-users", c.IperfUsers, "iperf3 authorized users `file` (user,sha256 lines) for -iperf3-rsa-private-key")
	fs.StringVar(&c.IperfUser, "iperf3-username", c.IperfUser, "throughput probes authenticate as `user` (password from $NETPERFKIT_IPERF3_PASSWORD)")
	fs.StringVar(&c.IperfPublicKey, "iperf3-rsa-public-key", c.IperfPublicKey, "the peers' iperf3 RSA public key PEM `file` for -iperf3-username")
	fs.StringVar(&c.PeersDNS, "peers-dns", c.PeersDNS, "more peers: the addresses of `name[:iperf3port[:sockperfport]]` (SRV targets when it has SRV records, else A/AAAA), looked up again every -peers-dns-every; own addresses left out")
	fs.Var(durFlag{&c.PeersDNSEvery}, "peers-dns-every", "look the -peers-dns name up every `interval` (0: every -rtt-every, or 10s without RTT probes)")
	fs.StringVar(&c.Mesh, "mesh", c.Mesh, "RTT probe `topology`: full (every peer every period), ring (the next agent), sample:K (K peers a period in a rotation that covers every peer in ceil((N-1)/K) periods), auto (full up to 32 peers, sample:32 above)")
	fs.Var(durFlag{&c.MeshExpire}, "mesh-expire", "with -peer-series -1, how long a peer's series outlive its last probe (default 3 x -rtt-every + -probe-timeout); no effect otherwise (`duration`)")
	fs.Var(durFlag{&c.StarvedWait}, "starved-wait", "flag an RTT probe during which its thread waited this `long` a message for a CPU (or its cgroup was throttled)")
	fs.IntVar(&c.PeerSeries, "peer-series", c.PeerSeries, "hold per-peer series for `N` peers, the ones after this agent in the fleet's address order (0: none, the zone-pair series cover every peer; -1: every peer probed, until -mesh-expire after its last probe)")
	fs.StringVar(&c.Zone, "zone", c.Zone, "the agent's own `zone` (src_zone; default: EC2's Availability Zone from IMDS when -zones is set)")
	fs.Var(newListFlag(&c.Zones), "zones", "the peers' zones by subnet (dst_zone): `CIDR=zone,...` (repeatable; longest prefix wins)")
	fs.BoolVar(&c.NativeOnly, "native-histograms-only", c.NativeOnly, "serve histograms as native histograms only, without classic buckets (Prometheus 2.40+ scraping protobuf; 2.42 needs --enable-feature=native-histograms)")
	fs.StringVar(&c.WebConfigFile, "web.config.file", c.WebConfigFile, "exporter-toolkit web configuration `file` for /metrics: TLS, client certificates, basic auth (bcrypt)")
	fs.StringVar(&c.LogFormat, "log-format", c.LogFormat, "log `format`: text or json")
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "log `level`: debug, info, warn or error")
	return fs
}

// parseConfig reads the defaults, then the -config file, then the flags.
func parseConfig(args []string, stderr io.Writer) (config, error) {
	// The first pass only finds -config (and rejects bad flags early).
	c := defaults()
	var file string
	if err := newFlagSet(&c, &file, stderr).Parse(args); err != nil {
		return c, err
	}
	c = defaults()
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return c, fmt.Errorf("config: %w", err)
		}
		if err := decodeConfig(b, &c); err != nil {
			return c, fmt.Errorf("config %s: %w", file, err)
		}
	}
	fs := newFlagSet(&c, &file, io.Discard)
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return c, c.validate()
}

// decodeConfig reads JSON over c; unknown fields are errors, so a typo does
// not silently leave a default in place.
func decodeConfig(b []byte, c *config) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(c); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the JSON object")
	}
	return nil
}

func (c *config) validate() error {
	switch {
	case c.Metrics == "":
		return errors.New("-metrics must not be empty")
	case !validPort(c.IperfPort, true) || !validPort(c.SockperfPort, true):
		return errors.New("-iperf3-port and -sockperf-port must be 0..65535")
	case c.RTTEvery < 0 || c.TputEvery < 0 || c.CacheEvery < 0:
		return errors.New("-rtt-every, -tput-every and -cache-every must not be negative")
	case c.RTTEvery > 0 && time.Duration(c.RTTEvery) < 10*time.Millisecond:
		return errors.New("-rtt-every must be at least 10ms")
	case c.TputEvery > 0 && time.Duration(c.TputEvery) < time.Second:
		return errors.New("-tput-every must be at least 1s")
	case c.RTTCount < 1 || c.RTTCount > 1000:
		return errors.New("-rtt-count must be 1..1000")
	case c.TputBytes <= 0 || c.TputBudget < 0:
		return errors.New("-tput-bytes must be positive and -tput-budget not negative")
	case c.TputEvery > 0 && c.TputBytes > c.TputBudget:
		// A probe reserves -tput-bytes before it starts: a budget smaller
		// than one probe would skip every probe, forever.
		return fmt.Errorf("-tput-bytes %d is more than the hourly -tput-budget %d: every throughput probe would be skipped", c.TputBytes, c.TputBudget)
	case c.TputDuration < duration(time.Second):
		return errors.New("-tput-duration must be at least 1s")
	case c.ProbeTimeout <= 0:
		return errors.New("-probe-timeout must be positive")
	case c.MaxProbes < 1:
		return errors.New("-max-probes must be at least 1")
	case c.SRDWindow < duration(time.Second):
		return errors.New("-srd-window must be at least 1s")
	case c.MaxTests < 1 || c.MaxConns < 1:
		return errors.New("-iperf3-max-tests and -sockperf-max-conns must be at least 1")
	case c.MaxTestsPerClient < 0:
		return errors.New("-iperf3-max-tests-per-client must not be negative")
	case !(c.BitrateLimit >= 0):
		return errors.New("-iperf3-bitrate-limit must not be negative")
	case (c.IperfKey == "") != (c.IperfUsers == ""):
		return errors.New("-iperf3-rsa-private-key and -iperf3-authorized-users go together")
	case (c.IperfUser == "") != (c.IperfPublicKey == ""):
		return errors.New("-iperf3-username and -iperf3-rsa-public-key go together")
	case c.LogFormat != "text" && c.LogFormat != "json":
		return fmt.Errorf("-log-format %q: want text or json", c.LogFormat)
	}
	if _, err := c.metricsAddr(); err != nil {
		return err
	}
	if _, err := parseLevel(c.LogLevel); err != nil {
		return err
	}
	if _, err := parsePeers(c.Peers, c.IperfPort, c.SockperfPort); err != nil {
		return err
	}
	if err := c.validateFleet(); err != nil {
		return err
	}
	for _, e := range c.Cache {
		if _, _, err := net.SplitHostPort(e); err != nil {
			return fmt.Errorf("-cache %q: %w", e, err)
		}
	}
	return nil
}

// listenHost is -listen without the brackets an IPv6 address may come in,
// ready for net.JoinHostPort; "" means every address.
func (c *config) listenHost() string {
	return strings.TrimSuffix(strings.TrimPrefix(c.Listen, "["), "]")
}

// metricsAddr is where /metrics is served: -metrics as given, or, when it
// is a port alone ("9469"), that port on the -listen host, which without
// -listen is every address, as for the servers (the default -metrics,
// 127.0.0.1:9469, stays on loopback). The port-only
// form serves manifests that know the node's address only as a variable:
// "$(NODE_IP):9469" cannot be split when NODE_IP is an IPv6 address, while
// "-listen=$(NODE_IP) -metrics=9469" works for both families.
func (c *config) metricsAddr() (string, error) {
	if c.Metrics != "" && strings.Trim(c.Metrics, "0123456789") == "" {
		p, err := strconv.Atoi(c.Metrics)
		if err != nil || !validPort(p, true) {
			return "", fmt.Errorf("-metrics %q: not a port 0..65535", c.Metrics)
		}
		return net.JoinHostPort(c.listenHost(), c.Metrics), nil
	}
	if _, _, err := net.SplitHostPort(c.Metrics); err != nil {
		return "", fmt.Errorf("-metrics %q: want host:port, [ipv6]:port, :port or a port alone (on the -listen host): %w", c.Metrics, err)
	}
	return c.Metrics, nil
}

func validPort(p int, zeroOK bool) bool { return p <= 65535 && (p > 0 || zeroOK && p == 0) }

// peer is one host the agent probes, with the ports its servers use.
type peer struct {
	Host         string
	IperfPort    int
	SockperfPort int
}

// Name is the peer label: the host as given.
func (p peer) Name() string { return p.Host }

func (p peer) sockperfAddr() string { return net.JoinHostPort(p.Host, strconv.Itoa(p.SockperfPort)) }
func (p peer) iperfAddr() string    { return net.JoinHostPort(p.Host, strconv.Itoa(p.IperfPort)) }

// parsePeer reads host[:iperf3port[:sockperfport]]; an IPv6 address goes in
// brackets ("[2001:db8::1]:5201"). Missing ports take the defaults.
func parsePeer(s string, iperfPort, sockPort int) (peer, error) {
	p := peer{IperfPort: iperfPort, SockperfPort: sockPort}
	rest := s
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return p, fmt.Errorf("peer %q: missing ]", s)
		}
		p.Host, rest = s[1:end], s[end+1:]
		if rest != "" && rest[0] != ':' {
			return p, fmt.Errorf("peer %q: want [addr]:port", s)
		}
		rest = strings.TrimPrefix(rest, ":")
	} else {
		p.Host, rest, _ = strings.Cut(s, ":")
	}
	if p.Host == "" || strings.ContainsAny(p.Host, " /[]") {
		return p, fmt.Errorf("peer %q: bad host", s)
	}
	if rest == "" {
		return p, nil
	}
	ip, sp, hasSock := strings.Cut(rest, ":")
	var err error
	if p.IperfPort, err = portOr(ip, iperfPort); err != nil {
		return p, fmt.Errorf("peer %q: iperf3 port: %w", s, err)
	}
	if hasSock {
		if p.SockperfPort, err = portOr(sp, sockPort); err != nil {
			return p, fmt.Errorf("peer %q: sockperf port: %w", s, err)
		}
	}
	return p, nil
}

// portOr parses a port; an empty string means def ("host::11112" keeps the
// default iperf3 port).
func portOr(s string, def int) (int, error) {
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || !validPort(n, false) {
		return 0, fmt.Errorf("%q is not a port 1..65535", s)
	}
	return n, nil
}

// parsePeers parses every entry and rejects a host given twice.
func parsePeers(entries []string, iperfPort, sockPort int) ([]peer, error) {
	var out []peer
	seen := map[string]bool{}
	for _, e := range entries {
		p, err := parsePeer(e, iperfPort, sockPort)
		if err != nil {
			return nil, err
		}
		if seen[p.Name()] {
			return nil, fmt.Errorf("peer %q given twice", p.Name())
		}
		seen[p.Name()] = true
		out = append(out, p)
	}
	return out, nil
}

// readPeersFile reads peer entries: one or more per line, separated by
// commas or blanks, with # starting a comment.
func readPeersFile(r io.Reader) ([]string, error) {
	var out []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		out = append(out, splitList(line)...)
	}
	return out, sc.Err()
}

// allPeers returns the peers of the flags plus those of the peers file, read
// now (at start and on every SIGHUP). A host in both is probed once.
func (c *config) allPeers() ([]peer, error) {
	entries := append([]string(nil), c.Peers...)
	if c.PeersFile != "" {
		f, err := os.Open(c.PeersFile)
		if err != nil {
			return nil, fmt.Errorf("peers file: %w", err)
		}
		more, err := readPeersFile(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("peers file %s: %w", c.PeersFile, err)
		}
		have := map[string]bool{}
		for _, e := range entries {
			if p, err := parsePeer(e, c.IperfPort, c.SockperfPort); err == nil {
				have[p.Name()] = true
			}
		}
		for _, e := range more {
			if p, err := parsePeer(e, c.IperfPort, c.SockperfPort); err == nil && have[p.Name()] {
				continue
			}
			entries = append(entries, e)
		}
	}
	return parsePeers(entries, c.IperfPort, c.SockperfPort)
}

// defaultRouteIface returns the interface of the IPv4 default route with the
// lowest metric in /proc/net/route's format.
func defaultRouteIface(r io.Reader) (string, error) {
	sc := bufio.NewScanner(r)
	best, bestMetric := "", -1
	first := true
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if first {
			first = false
			if len(f) > 0 && f[0] == "Iface" {
				continue
			}
		}
		// Iface Destination Gateway Flags RefCnt Use Metric Mask ...
		if len(f) < 8 || f[1] != "00000000" || f[7] != "00000000" {
			continue
		}
		flags, err := strconv.ParseUint(f[3], 16, 32)
		if err != nil || flags&1 == 0 { // RTF_UP
			continue
		}
		m, err := strconv.Atoi(f[6])
		if err != nil || m < 0 {
			continue
		}
		if bestMetric < 0 || m < bestMetric {
			best, bestMetric = f[0], m
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	if best == "" {
		return "", errors.New("no IPv4 default route")
	}
	return best, nil
}

// defaultPeerSeries is -peer-series' default: as many peers as one period
// of -mesh auto probes above 32 peers (a full mesh up to 32 keeps every
// peer's series); maxPeerSeries bounds the flag.
const (
	defaultPeerSeries = autoSampleK
	maxPeerSeries     = 10000
)

// validateFleet checks the settings of issues 33 and 41.
func (c *config) validateFleet() error {
	if _, err := parseTopology(c.Mesh); err != nil {
		return err
	}
	switch {
	case c.PeersDNSEvery < 0 || c.MeshExpire < 0 || c.StarvedWait < 0:
		return errors.New("-peers-dns-every, -mesh-expire and -starved-wait must not be negative")
	case c.PeersDNSEvery > 0 && time.Duration(c.PeersDNSEvery) < 100*time.Millisecond:
		return errors.New("-peers-dns-every must be at least 100ms")
	case c.PeerSeries < -1 || c.PeerSeries > maxPeerSeries:
		return fmt.Errorf("-peer-series must be -1 (every peer) or 0..%d", maxPeerSeries)
	}
	if _, err := parseZones(c.Zones); err != nil {
		return err
	}
	if c.WebConfigFile != "" {
		if err := web.Validate(c.WebConfigFile); err != nil {
			return fmt.Errorf("-web.config.file: %w", err)
		}
	}
	if c.PeersDNS != "" {
		if _, err := newDNSPeers(c.PeersDNS, c.IperfPort, c.SockperfPort, nil); err != nil {
			return err
		}
	}
	return nil
}

// dnsEvery is how often the -peers-dns name is looked up.
func (c *config) dnsEvery() time.Duration {
	switch {
	case c.PeersDNSEvery > 0:
		return time.Duration(c.PeersDNSEvery)
	case c.RTTEvery > 0:
		return time.Duration(c.RTTEvery)
	}
	return 10 * time.Second
}

// meshPeerSeries is -peer-series as the mesh reads it, where 0 means every
// peer and a negative number none: -peer-series -1 means every peer, and
// -peer-series 0 none.
func (c *config) meshPeerSeries() int {
	switch c.PeerSeries {
	case 0:
		return -1
	case -1:
		return 0
	}
	return c.PeerSeries
}

// warnings are the settings that parse but do nothing, for the log.
func (c *config) warnings() []string {
	if c.MeshExpire > 0 && c.PeerSeries != -1 {
		return []string{"-mesh-expire has no effect unless -peer-series is -1: the peers holding series keep them between probes"}
	}
	return nil
}

// meshExpire is how long a peer's series outlive its last probe, with
// -peer-series -1.
func (c *config) meshExpire() time.Duration {
	if c.MeshExpire > 0 {
		return time.Duration(c.MeshExpire)
	}
	return 3*time.Duration(c.RTTEvery) + time.Duration(c.ProbeTimeout)
}
