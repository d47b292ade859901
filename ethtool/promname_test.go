package ethtool

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The expressions of node_exporter's ethtool collector, the reference that
// sanitize and renameRxTx are written out from.
var (
	refInvalidRun = regexp.MustCompile(`_*[^0-9A-Za-z_]+_*`)
	refRxWord     = regexp.MustCompile(`(^|_)rx(_|$)`)
	refTxWord     = regexp.MustCompile(`(^|_)tx(_|$)`)
)

func refPrometheusName(stat string) string {
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

func TestPrometheusNameMatchesNodeExporterExpressions(t *testing.T) {
	for _, s := range nameSeeds {
		require.Equal(t, refPrometheusName(s), PrometheusName(s), "%q", s)
		require.Equal(t, refInvalidRun.ReplaceAllString(s, "_"), sanitize(s), "%q", s)
	}
}

func FuzzSanitizeMatchesRegexp(f *testing.F) {
	for _, s := range nameSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		require.Equal(t, refInvalidRun.ReplaceAllString(s, "_"), sanitize(s), "%q", s)
		require.Equal(t, refPrometheusName(s), PrometheusName(s), "%q", s)
	})
}
