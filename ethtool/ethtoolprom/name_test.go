package ethtoolprom

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/netperfkit/netperfkit/ethtool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The expressions of node_exporter's ethtool collector, the reference that
// sanitize and renameRxTx are written out from.
var (
	refInvalidRun = regexp.MustCompile(`_*[^0-9A-Za-z_]+_*`)
	refRxWord     = regexp.MustCompile(`(^|_)rx(_|$)`)
	refTxWord     = regexp.MustCompile(`(^|_)tx(_|$)`)
)

func refMetricName(stat string) string {
	if n, ok := nodeExporterNames[stat]; ok {
		return n.metric
	}
	s := strings.TrimLeft(strings.ToLower(refInvalidRun.ReplaceAllString(stat, "_")), "_")
	s = refRxWord.ReplaceAllString(s, "${1}received${2}")
	return "node_ethtool_" + refTxWord.ReplaceAllString(s, "${1}transmitted${2}")
}

var nameSeeds = []string{
	"rx_bytes", "tx_tx_poll", "rx_rx_rx", "_rx_", "rx", "tx", "rxtx", "a_rx", "a_rx_b", "__rx__tx__",
	"Queue[0] AllocFails", "[3]: tx_bytes", "     err", "port.VF_admin_queue_requests", "a._.b",
	"a_._b", "_._", "..", "__", "", "x\xffy", "é_rx", "rx-tx", "tx_rx_tx_rx", "q_0_tx_", "_tx",
}

func TestMetricNameMatchesNodeExporterExpressions(t *testing.T) {
	for _, s := range nameSeeds {
		require.Equal(t, refMetricName(s), metricNameOf(s), "%q", s)
		require.Equal(t, refInvalidRun.ReplaceAllString(s, "_"), sanitize(s), "%q", s)
	}
}

func FuzzSanitizeMatchesRegexp(f *testing.F) {
	for _, s := range nameSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		require.Equal(t, refInvalidRun.ReplaceAllString(s, "_"), sanitize(s), "%q", s)
		require.Equal(t, refMetricName(s), metricNameOf(s), "%q", s)
	})
}

func TestMetricName(t *testing.T) {
	for in, want := range map[string]string{
		"rx_packets":             "node_ethtool_received_packets_total",
		"tx_bytes":               "node_ethtool_transmitted_bytes_total",
		"queue_0_tx_cnt":         "node_ethtool_queue_0_transmitted_cnt",
		"queue_0_tx_tx_poll":     "node_ethtool_queue_0_transmitted_tx_poll",
		"rx_queue_0_xdp_packets": "node_ethtool_received_queue_0_xdp_packets",
		"pps_allowance_exceeded": "node_ethtool_pps_allowance_exceeded",
		"ena_srd_tx_pkts":        "node_ethtool_ena_srd_transmitted_pkts",
		"[0]: rx_bytes":          "node_ethtool_0_received_bytes",
		"rx-64-byte Packets":     "node_ethtool_received_64_byte_packets",
		"Tx_Errors_Phy":          "node_ethtool_transmitted_errors_phy",
		"__x":                    "node_ethtool_x",
		"rxtx":                   "node_ethtool_rxtx",
		"tx":                     "node_ethtool_transmitted",
	} {
		assert.Equal(t, want, metricNameOf(in), in)
	}
}

func TestWriteGolden(t *testing.T) {
	a := &ethtool.Snapshot{Interface: "eth0", Driver: "ena", DriverVersion: "2.17.0g", BusInfo: "0000:00:05.0",
		Stats: ethtool.Stats{{Name: "tx_timeout", Value: 0}, {Name: "pps_allowance_exceeded", Value: 1234}, {Name: "queue_0_tx_cnt", Value: 77}, {Name: "rx_packets", Value: 5}}}
	b := &ethtool.Snapshot{Interface: "eth1", Driver: "ena", Stats: ethtool.Stats{{Name: "pps_allowance_exceeded", Value: 1}, {Name: "weird\"name", Value: 2}}}
	var buf bytes.Buffer
	require.NoError(t, Write(&buf, a, b))
	golden := filepath.Join("testdata", "prometheus.golden")
	if os.Getenv("UPDATE_GOLDEN") != "" {
		require.NoError(t, os.WriteFile(golden, buf.Bytes(), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	assert.Equal(t, string(want), buf.String())
	assert.Contains(t, buf.String(), "node_ethtool_pps_allowance_exceeded{device=\"eth0\"} 1234\nnode_ethtool_pps_allowance_exceeded{device=\"eth1\"} 1\n")
	assert.Equal(t, 1, strings.Count(buf.String(), "# TYPE node_ethtool_pps_allowance_exceeded counter"))
}
