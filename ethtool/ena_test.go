package ethtool

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGroupQueuesENA(t *testing.T) {
	g := GroupQueues(parseFile(t, "ena-upstream.txt"))
	require.Len(t, g.Queues, 5) // tx0 rx0 tx1 rx1 xdp_tx2
	assert.Equal(t, Queue{Index: 0, Kind: "tx", Stats: g.Queues[0].Stats}, g.Queues[0])
	assert.Equal(t, "rx", g.Queues[1].Kind)
	assert.Equal(t, "xdp_tx", g.Queues[4].Kind)
	assert.Equal(t, 2, g.Queues[4].Index)
	assert.Equal(t, "cnt", g.Queues[0].Stats[0].Name)
	assert.Equal(t, "tx_poll", g.Queues[0].Stats[8].Name, "the doubled queue_0_tx_tx_poll keeps its inner tx")
	require.Len(t, g.Totals, 3)
	assert.Equal(t, QueueTotal{Kind: "tx", Queues: 2, Stats: g.Totals[0].Stats}, g.Totals[0])
	s := parseFile(t, "ena-upstream.txt")
	q0, _ := s.Get("queue_0_tx_cnt")
	q1, _ := s.Get("queue_1_tx_cnt")
	total, ok := g.Total("tx", "cnt")
	require.True(t, ok)
	assert.Equal(t, q0+q1, total)
	_, ok = g.Total("nope", "cnt")
	assert.False(t, ok)
	assert.Len(t, g.Other, 7+5+5)
	assert.Equal(t, "tx_timeout", g.Other[0].Name)
}

func TestGroupQueuesVethStyle(t *testing.T) {
	g := GroupQueues(Stats{
		{"peer_ifindex", 2}, {"rx_queue_0_xdp_packets", 5}, {"rx_queue_1_xdp_packets", 6},
		{"tx_queue_0_xdp_xmit", 1}, {"rx_queue_x_bad", 1}, {"queue_", 1}, {"queue_1_", 1}, {"queue_2_zz_a", 1}, {"rx_queue_3_", 1},
	})
	require.Len(t, g.Queues, 3)
	assert.Equal(t, Queue{Index: 1, Kind: "rx", Stats: Stats{{"xdp_packets", 6}}}, g.Queues[1])
	v, _ := g.Total("rx", "xdp_packets")
	assert.Equal(t, uint64(11), v)
	assert.Equal(t, Stats{{"peer_ifindex", 2}, {"rx_queue_x_bad", 1}, {"queue_", 1}, {"queue_1_", 1}, {"queue_2_zz_a", 1}, {"rx_queue_3_", 1}}, g.Other)
}

func TestGroupQueuesOfDelta(t *testing.T) {
	d := Diff(snap(0, parseFile(t, "ena-2.17-same-az-before.txt")), snap(15*time.Second, parseFile(t, "ena-2.17-same-az-after.txt")))
	g := GroupQueues(d.Increases())
	require.Len(t, g.Queues, 16)
	bytesTx, _ := g.Total("tx", "bytes")
	var sum uint64
	for q := range 8 {
		sum += d.Increase("queue_" + itoa(q) + "_tx_bytes")
	}
	assert.Equal(t, sum, bytesTx)
	assert.NotZero(t, bytesTx)
}

func itoa(i int) string { return uitoa(uint64(i)) }

func TestNewENA(t *testing.T) {
	e, ok := NewENA(parseFile(t, "ena-2.17-cross-az-after.txt"))
	require.True(t, ok)
	require.NotNil(t, e.Allowance)
	require.NotNil(t, e.SRD)
	assert.Equal(t, uint64(1234), e.Allowance.PPSExceeded)
	require.NotNil(t, e.Allowance.ConntrackAvailable)
	assert.Equal(t, uint64(136781), *e.Allowance.ConntrackAvailable)
	assert.Equal(t, SRD{Mode: 3, TxPkts: 1232525165 + 24534321, EligibleTxPkts: 1232525250 + 24534339, RxPkts: 1225995434 + 24398770, ResourceUtilization: 2}, *e.SRD)

	e, ok = NewENA(parseFile(t, "ena-2.4-no-srd.txt"))
	require.True(t, ok)
	assert.Nil(t, e.SRD)
	require.NotNil(t, e.Allowance)
	assert.Nil(t, e.Allowance.ConntrackAvailable)
	assert.Equal(t, uint64(3), e.Allowance.BWOutExceeded)

	e, ok = NewENA(parseFile(t, "ena-1.x-old.txt"))
	assert.True(t, ok, "old ENA still has admin queue counters")
	assert.Nil(t, e.Allowance)

	_, ok = NewENA(parseFile(t, "veth.txt"))
	assert.False(t, ok)
}

func TestNewENASRDNeedsBothPacketCounters(t *testing.T) {
	// Without ena_srd_eligible_tx_pkts the SRD view would read 0 eligible
	// packets though SRD sent 500.
	e, ok := NewENA(Stats{{"ena_srd_mode", 1}, {"ena_srd_tx_pkts", 500}})
	assert.False(t, ok)
	assert.Nil(t, e.SRD)
	e, _ = NewENA(Stats{{"ena_srd_mode", 1}, {"ena_srd_eligible_tx_pkts", 500}})
	assert.Nil(t, e.SRD)
	e, ok = NewENA(Stats{{"ena_srd_tx_pkts", 5}, {"ena_srd_eligible_tx_pkts", 6}})
	assert.True(t, ok)
	require.NotNil(t, e.SRD)
	assert.Equal(t, SRD{TxPkts: 5, EligibleTxPkts: 6}, *e.SRD)
}

func TestExplain(t *testing.T) {
	before := snap(0, parseFile(t, "ena-2.17-cross-az-before.txt"))
	after := snap(20*time.Second, parseFile(t, "ena-2.17-cross-az-after.txt"))
	f := Explain(Diff(before, after))
	var lines []string
	for _, x := range f {
		lines = append(lines, x.String())
	}
	assert.Equal(t, []string{
		"pps_allowance_exceeded +1234: packets were shaped by the PPS allowance (bidirectional packets per second above the instance's limit)",
		"ena_srd_eligible_tx_pkts +18: packets could have used ENA Express (SRD) but went over plain ENA (24534321 of 24534339 eligible went over SRD)",
		"conntrack_allowance_available: room for tracked connections fell from 136790 to 136781",
	}, lines)
	assert.Equal(t, SeverityWarning, f[0].Severity)

	quiet := Diff(before, before)
	assert.Empty(t, Explain(quiet))

	reset := Diff(snap(0, Stats{{"total_resets", 0}, {"tx_timeout", 2}, {"queue_0_tx_cnt", 900}, {"ena_srd_resource_utilization", 10}}),
		snap(time.Second, Stats{{"total_resets", 1}, {"tx_timeout", 3}, {"queue_0_tx_cnt", 5}, {"ena_srd_resource_utilization", 97}}))
	f = Explain(reset)
	require.Len(t, f, 4)
	assert.Equal(t, "total_resets", f[0].Counter)
	assert.Equal(t, SeverityCritical, f[0].Severity)
	assert.Equal(t, "tx_timeout", f[1].Counter)
	assert.Contains(t, f[2].Meaning, "97% used")
	assert.Equal(t, "queue_0_tx_cnt", f[3].Counter)
	assert.Contains(t, f[3].String(), "went backwards from 900 to 5")

	many := Stats{}
	for i := range 10 {
		many = append(many, Stat{"c" + itoa(i), 10})
	}
	zero := many.clone()
	for i := range zero {
		zero[i].Value = 1
	}
	f = Explain(Diff(snap(0, many), snap(time.Second, zero)))
	require.Len(t, f, 1)
	assert.Equal(t, "10 counters", f[0].Counter)
}

func TestPrometheusName(t *testing.T) {
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
		assert.Equal(t, want, PrometheusName(in), in)
	}
}

func TestWritePrometheusGolden(t *testing.T) {
	a := &Snapshot{Interface: "eth0", Driver: "ena", DriverVersion: "2.17.0g", BusInfo: "0000:00:05.0",
		Stats: Stats{{"tx_timeout", 0}, {"pps_allowance_exceeded", 1234}, {"queue_0_tx_cnt", 77}, {"rx_packets", 5}}}
	b := &Snapshot{Interface: "eth1", Driver: "ena", Stats: Stats{{"pps_allowance_exceeded", 1}, {"weird\"name", 2}}}
	var buf bytes.Buffer
	require.NoError(t, WritePrometheus(&buf, a, b))
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
