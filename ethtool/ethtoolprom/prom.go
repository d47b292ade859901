package ethtoolprom

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/netperfkit/netperfkit/ethtool"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// nodeExporterNames are the statistics node_exporter's ethtool collector
// exposes under fixed names with their own help text.
var nodeExporterNames = map[string]struct{ metric, help string }{
	"rx_bytes":   {"node_ethtool_received_bytes_total", "Network interface bytes received"},
	"rx_dropped": {"node_ethtool_received_dropped_total", "Number of received frames dropped"},
	"rx_errors":  {"node_ethtool_received_errors_total", "Number of received frames with errors"},
	"rx_packets": {"node_ethtool_received_packets_total", "Network interface packets received"},
	"tx_bytes":   {"node_ethtool_transmitted_bytes_total", "Network interface bytes sent"},
	"tx_errors":  {"node_ethtool_transmitted_errors_total", "Number of sent frames with errors"},
	"tx_packets": {"node_ethtool_transmitted_packets_total", "Network interface packets sent"},
}

// metricNameOf returns the metric name node_exporter's ethtool collector
// gives the statistic called stat: "node_ethtool_" plus the name lower-cased
// with runs of characters outside [0-9A-Za-z_] turned into one underscore,
// leading underscores dropped, and the words rx and tx spelt received and
// transmitted; the seven common counters it pre-declares (rx_bytes ...) get
// their _total names.
func metricNameOf(stat string) string {
	if n, ok := nodeExporterNames[stat]; ok {
		return n.metric
	}
	return "node_ethtool_" + renameRxTx(strings.TrimLeft(strings.ToLower(sanitize(stat)), "_"))
}

// sanitize does what node_exporter's SanitizeMetricName does with the
// expression _*[^0-9A-Za-z_]+_* : every run of characters outside
// [0-9A-Za-z_], with the underscores around it, becomes one underscore. It
// is written out by hand because the expression dominated a scrape's cost;
// FuzzSanitizeMatchesRegexp holds it to the expression.
func sanitize(s string) string {
	if !needsSanitize(s) {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		j := i
		for j < len(s) && s[j] == '_' {
			j++
		}
		if j == len(s) || validNameByte(s[j]) {
			// Underscores not followed by an invalid run stay; so does
			// the valid character after them.
			if j < len(s) {
				j++
			}
			b = append(b, s[i:j]...)
			i = j
			continue
		}
		for j < len(s) && !validNameByte(s[j]) {
			j++
		}
		for j < len(s) && s[j] == '_' {
			j++
		}
		b = append(b, '_')
		i = j
	}
	return string(b)
}

// validNameByte reports whether c is in [0-9A-Za-z_]. Bytes of multi-byte
// UTF-8 sequences (and invalid bytes) are all outside it, as their runes
// are.
func validNameByte(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

func needsSanitize(s string) bool {
	for i := 0; i < len(s); i++ {
		if !validNameByte(s[i]) {
			return true
		}
	}
	return false
}

// renameRxTx spells the words rx and tx out, as node_exporter's expressions
// (^|_)rx(_|$) and (^|_)tx(_|$) do with their non-overlapping matching: in
// "tx_tx_poll" only the first tx is rewritten, because the underscore
// between the two belongs to the first match.
func renameRxTx(s string) string {
	return renameWord(renameWord(s, "rx", "received"), "tx", "transmitted")
}

// renameWord replaces the two-letter word w, delimited by the start or end
// of s or by an underscore, with long, leftmost match first; a match takes
// its delimiting underscores with it.
func renameWord(s, w, long string) string {
	var b []byte
	last, pos := 0, 0 // copied up to last; matches may start at pos
	for i := 0; i+len(w) <= len(s); i++ {
		start := -1
		switch {
		case i == 0 && s[:len(w)] == w:
			start = 0
		case i >= pos && s[i] == '_' && i+1+len(w) <= len(s) && s[i+1:i+1+len(w)] == w:
			start = i + 1
		}
		if start < 0 {
			continue
		}
		end := start + len(w)
		if end != len(s) && s[end] != '_' {
			continue
		}
		b = append(b, s[last:start]...)
		b = append(b, long...)
		last = end
		pos = end
		if end < len(s) {
			pos = end + 1 // the trailing underscore is part of the match
		}
		i = end - 1
	}
	if b == nil {
		return s
	}
	return string(append(b, s[last:]...))
}

// infoName is the name of node_exporter's info metric; no statistic may
// take it.
const infoName = "node_ethtool_info"

// infoDesc is node_exporter's node_ethtool_info, a constant 1 labelled with
// the driver information.
var infoDesc = prometheus.NewDesc(infoName,
	"A metric with a constant '1' value labeled by bus_info, device, driver, expansion_rom_version, firmware_version, version.",
	[]string{"bus_info", "device", "driver", "expansion_rom_version", "firmware_version", "version"}, nil)

// Collector is a prometheus.Collector of interfaces' driver statistics with
// node_exporter's ethtool names (see metricNameOf), so dashboards built on
// node_exporter's ethtool collector work unchanged: node_ethtool_info with
// the driver labels, then one metric per statistic labelled by device.
// Unlike node_exporter, which exposes every statistic untyped, statistics are
// typed: counters as counters, the levels IsGauge lists as gauges. The names
// stay node_exporter's (no _total is added), so serve them in the classic
// text format, not OpenMetrics, which would append _total to counters.
//
// As in node_exporter, when several statistics of one device map to the same
// metric name, all of them are left out; so is a statistic whose name maps
// to node_ethtool_info ("info", "Info", ":info"...), which would clash with
// the info metric and fail the whole scrape. A metric name takes its help
// text and type from the first statistic seen with it.
//
// The metric names depend on the driver, so Describe sends nothing: register
// the Collector as an unchecked collector (prometheus.Registry.Register does
// that by itself). A Collector is safe for concurrent use; concurrent
// scrapes take turns.
type Collector struct {
	// read fills the snapshots to expose; it returns one error per
	// interface it could not read (nil entries are skipped).
	read func() ([]*ethtool.Snapshot, []error)

	mu      sync.Mutex
	names   map[string]string               // statistic name -> metric name
	entries map[string]*prometheus.Desc     // metric name -> descriptor
	types   map[string]prometheus.ValueType // metric name -> type
	seen    map[string]int                  // per-device scratch: metric name -> uses
}

// NewCollector returns a Collector that reads the statistics and driver
// information of each of ifaces through c at every scrape, reusing its
// buffers between scrapes (ethtool.Client.SnapshotInto). An interface that
// cannot be read (see ethtool.Client.Snapshot for the errors) is reported to
// the registry as an invalid metric wrapping the error, and the other
// interfaces are still collected. The Collector does not close c. A nil c
// gives a Collector whose every scrape reports that error.
func NewCollector(c *ethtool.Client, ifaces ...string) *Collector {
	if c == nil {
		errNil := errors.New("ethtoolprom: NewCollector: nil *ethtool.Client")
		return newCollector(func() ([]*ethtool.Snapshot, []error) { return nil, []error{errNil} })
	}
	return newReadCollector(c.SnapshotInto, ifaces)
}

// newReadCollector is NewCollector with the read as a parameter, for tests.
func newReadCollector(read func(iface string, s *ethtool.Snapshot) error, ifaces []string) *Collector {
	snaps := make([]*ethtool.Snapshot, len(ifaces))
	for i := range snaps {
		snaps[i] = &ethtool.Snapshot{}
	}
	out := make([]*ethtool.Snapshot, 0, len(ifaces))
	var errs []error
	return newCollector(func() ([]*ethtool.Snapshot, []error) {
		out, errs = out[:0], errs[:0]
		for i, iface := range ifaces {
			s := snaps[i]
			if err := read(iface, s); err != nil {
				s.Interface = ""
				errs = append(errs, fmt.Errorf("ethtoolprom: collect %s: %w", iface, err))
				continue
			}
			out = append(out, s)
		}
		return out, errs
	})
}

// NewSnapshotCollector returns a Collector that exposes the given snapshots,
// for example ones saved earlier and read back with ethtool.ParseSnapshot.
// The snapshots must not change while the Collector is in use; nil ones are
// skipped.
func NewSnapshotCollector(snaps ...*ethtool.Snapshot) *Collector {
	return newCollector(func() ([]*ethtool.Snapshot, []error) { return snaps, nil })
}

func newCollector(read func() ([]*ethtool.Snapshot, []error)) *Collector {
	return &Collector{
		read:    read,
		names:   map[string]string{},
		entries: map[string]*prometheus.Desc{},
		types:   map[string]prometheus.ValueType{},
		seen:    map[string]int{},
	}
}

// Describe sends nothing: the Collector is unchecked (see Collector).
func (c *Collector) Describe(chan<- *prometheus.Desc) {}

// Collect reads the statistics and sends them to ch. A nil or zero
// Collector, or a nil ch, collects nothing.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	if c == nil || c.read == nil || ch == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	snaps, errs := c.read()
	for _, err := range errs {
		if err != nil {
			ch <- prometheus.NewInvalidMetric(infoDesc, err)
		}
	}
	for _, s := range snaps {
		if s != nil {
			c.collectSnapshot(ch, s)
		}
	}
}

func (c *Collector) collectSnapshot(ch chan<- prometheus.Metric, s *ethtool.Snapshot) {
	send(ch, infoDesc, prometheus.GaugeValue, 1,
		s.BusInfo, s.Interface, s.Driver, "", s.FirmwareVersion, s.DriverVersion)
	if !utf8.ValidString(s.Interface) {
		return // the info metric above reports the invalid label value
	}
	clear(c.seen)
	for _, st := range s.Stats {
		c.seen[c.metricName(st.Name)]++
	}
	// One label pair for every statistic of the device, and one allocation
	// for all of this scrape's metrics. All of it is fresh for each scrape
	// (the label strings too: the snapshot is reused by the next scrape),
	// because the gathered metric families point into it after Collect
	// returns.
	labelName, device := "device", s.Interface
	labels := []*dto.LabelPair{{Name: &labelName, Value: &device}}
	ms := make([]statMetric, len(s.Stats))
	for i, st := range s.Stats {
		name := c.names[st.Name]
		if c.seen[name] != 1 || name == infoName {
			continue
		}
		desc, typ := c.entry(name, st.Name)
		ms[i] = statMetric{desc: desc, gauge: typ == prometheus.GaugeValue, labels: labels, value: float64(st.Value)}
		ch <- &ms[i]
	}
}

// send sends one const metric, or an invalid metric carrying the error when
// a label value is not valid UTF-8 (driver strings come from the kernel or a
// file), so a bad snapshot fails the scrape instead of panicking.
func send(ch chan<- prometheus.Metric, d *prometheus.Desc, typ prometheus.ValueType, v float64, labels ...string) {
	m, err := prometheus.NewConstMetric(d, typ, v, labels...)
	if err != nil {
		m = prometheus.NewInvalidMetric(d, fmt.Errorf("ethtoolprom: %w", err))
	}
	ch <- m
}

// statMetric is one statistic of one device in one scrape. It does what a
// const metric does at a fifth of the allocations: the device's label pair
// is shared by all its statistics and built once per scrape.
type statMetric struct {
	desc   *prometheus.Desc
	gauge  bool
	labels []*dto.LabelPair
	value  float64
}

func (m *statMetric) Desc() *prometheus.Desc { return m.desc }

func (m *statMetric) Write(out *dto.Metric) error {
	out.Label = m.labels
	if m.gauge {
		out.Gauge = &dto.Gauge{Value: &m.value}
	} else {
		out.Counter = &dto.Counter{Value: &m.value}
	}
	return nil
}

// metricName returns metricNameOf(stat), computed once per statistic name.
func (c *Collector) metricName(stat string) string {
	n, ok := c.names[stat]
	if !ok {
		n = metricNameOf(stat)
		c.names[stat] = n
	}
	return n
}

// entry returns the descriptor and type of the metric called name, creating
// them from stat, the statistic it was first seen for, with node_exporter's
// help text.
func (c *Collector) entry(name, stat string) (*prometheus.Desc, prometheus.ValueType) {
	if d, ok := c.entries[name]; ok {
		return d, c.types[name]
	}
	help := "Network interface " + sanitize(stat)
	if n, ok := nodeExporterNames[stat]; ok {
		help = n.help
	}
	typ := prometheus.CounterValue
	if ethtool.IsGauge(stat) {
		typ = prometheus.GaugeValue
	}
	d := prometheus.NewDesc(name, help, []string{"device"}, nil)
	c.entries[name], c.types[name] = d, typ
	return d, typ
}

// Write writes snapshots in the Prometheus text exposition format
// as a NewSnapshotCollector of them registered alone would be scraped:
// node_ethtool_info, then one typed metric per statistic labelled by device,
// sorted by metric name. It returns the registry's error when the snapshots
// give inconsistent metrics (for example one interface twice), or the write
// error.
func Write(w io.Writer, snaps ...*ethtool.Snapshot) error {
	if w == nil {
		return errors.New("ethtoolprom: Write: nil io.Writer w")
	}
	reg := prometheus.NewRegistry()
	if err := reg.Register(NewSnapshotCollector(snaps...)); err != nil {
		return fmt.Errorf("ethtoolprom: %w", err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		return fmt.Errorf("ethtoolprom: %w", err)
	}
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return fmt.Errorf("ethtoolprom: %w", err)
		}
	}
	return nil
}
