package ethtool

import (
	"bufio"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
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

// PrometheusName returns the metric name node_exporter's ethtool collector
// gives the statistic called stat: "node_ethtool_" plus the name lower-cased
// with runs of characters outside [0-9A-Za-z_] turned into one underscore,
// leading underscores dropped, and the words rx and tx spelt received and
// transmitted; the seven common counters it pre-declares (rx_bytes ...) get
// their _total names.
func PrometheusName(stat string) string {
	if n, ok := nodeExporterNames[stat]; ok {
		return n.metric
	}
	return "node_ethtool_" + renameRxTx(strings.TrimLeft(strings.ToLower(sanitize(stat)), "_"))
}

// The expressions of node_exporter's ethtool collector; compiled once and
// only read afterwards.
var (
	invalidRun = regexp.MustCompile(`_*[^0-9A-Za-z_]+_*`)
	rxWord     = regexp.MustCompile(`(^|_)rx(_|$)`)
	txWord     = regexp.MustCompile(`(^|_)tx(_|$)`)
)

func sanitize(s string) string { return invalidRun.ReplaceAllString(s, "_") }

// renameRxTx spells the words rx and tx out, with the non-overlapping
// matching of the regular expressions: in "tx_tx_poll" only the first tx is
// rewritten, exactly as node_exporter does.
func renameRxTx(s string) string {
	s = rxWord.ReplaceAllString(s, "${1}received${2}")
	return txWord.ReplaceAllString(s, "${1}transmitted${2}")
}

// WritePrometheus writes snapshots in the Prometheus text exposition format
// with node_exporter's ethtool naming, so dashboards built on
// node_exporter's ethtool collector work unchanged: node_ethtool_info with
// the driver labels, then one untyped metric per statistic labelled by
// device. Metrics are sorted by name. A statistic whose name maps to a
// metric already written for the same device is skipped.
func WritePrometheus(w io.Writer, snaps ...*Snapshot) error {
	bw := bufio.NewWriter(w)
	bw.WriteString("# HELP node_ethtool_info A metric with a constant '1' value labeled by bus_info, device, driver, expansion_rom_version, firmware_version, version.\n")
	bw.WriteString("# TYPE node_ethtool_info gauge\n")
	for _, s := range snaps {
		bw.WriteString(`node_ethtool_info{bus_info="` + escape(s.BusInfo) + `",device="` + escape(s.Interface) +
			`",driver="` + escape(s.Driver) + `",expansion_rom_version="",firmware_version="` + escape(s.FirmwareVersion) +
			`",version="` + escape(s.DriverVersion) + "\"} 1\n")
	}
	type sample struct {
		device string
		value  uint64
	}
	type family struct {
		help    string
		samples []sample
		devices map[string]bool
	}
	fams := map[string]*family{}
	for _, s := range snaps {
		for _, st := range s.Stats {
			name := PrometheusName(st.Name)
			f := fams[name]
			if f == nil {
				help := "Network interface " + st.Name
				if n, ok := nodeExporterNames[st.Name]; ok {
					help = n.help
				}
				f = &family{help: help, devices: map[string]bool{}}
				fams[name] = f
			}
			if f.devices[s.Interface] {
				continue
			}
			f.devices[s.Interface] = true
			f.samples = append(f.samples, sample{s.Interface, st.Value})
		}
	}
	names := make([]string, 0, len(fams))
	for n := range fams {
		names = append(names, n)
	}
	sort.Strings(names)
	var num []byte
	for _, n := range names {
		f := fams[n]
		bw.WriteString("# HELP " + n + " " + escapeHelp(f.help) + "\n# TYPE " + n + " untyped\n")
		for _, sm := range f.samples {
			num = strconv.AppendUint(num[:0], sm.value, 10)
			bw.WriteString(n + `{device="` + escape(sm.device) + `"} `)
			bw.Write(num)
			bw.WriteByte('\n')
		}
	}
	return bw.Flush()
}

// The exposition format's escapes for label values and for HELP text.
var (
	labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
)

func escape(s string) string     { return labelEscaper.Replace(s) }
func escapeHelp(s string) string { return helpEscaper.Replace(s) }
