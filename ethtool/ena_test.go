package ethtool

import (
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
	d := mustDiff(t, snap(0, parseFile(t, "ena-2.17-same-az-before.txt")), snap(15*time.Second, parseFile(t, "ena-2.17-same-az-after.txt")))
	g := GroupQueues(d.increases())
	require.Len(t, g.Queues, 16)
	bytesTx, _ := g.Total("tx", "bytes")
	var sum uint64
	for q := range 8 {
		sum += increase(d, "queue_"+itoa(q)+"_tx_bytes")
	}
	assert.Equal(t, sum, bytesTx)
	assert.NotZero(t, bytesTx)
}

func itoa(i int) string { return uitoa(uint64(i)) }

func TestStatsAllowance(t *testing.T) {
	a, ok := parseFile(t, "ena-2.17-cross-az-after.txt").Allowance()
	require.True(t, ok)
	assert.Equal(t, uint64(1234), a.PPSExceeded)
	require.NotNil(t, a.ConntrackAvailable)
	assert.Equal(t, uint64(136781), *a.ConntrackAvailable)
	assert.Nil(t, a.ConntrackAvailableBefore, "levels have no window start")
	assert.Nil(t, a.Reset)
	assert.Equal(t, []string{"pps_allowance_exceeded"}, a.Exceeded())

	a, ok = parseFile(t, "ena-2.4-no-srd.txt").Allowance()
	require.True(t, ok)
	assert.Nil(t, a.ConntrackAvailable)
	assert.Equal(t, uint64(3), a.BWOutExceeded)

	_, ok = parseFile(t, "ena-1.x-old.txt").Allowance()
	assert.False(t, ok, "ENA 1.x has no allowance counters")
	_, ok = parseFile(t, "veth.txt").Allowance()
	assert.False(t, ok)
	_, ok = Stats(nil).Allowance()
	assert.False(t, ok)
}

func TestExplain(t *testing.T) {
	before := snap(0, parseFile(t, "ena-2.17-cross-az-before.txt"))
	after := snap(20*time.Second, parseFile(t, "ena-2.17-cross-az-after.txt"))
	f := Explain(mustDiff(t, before, after))
	var lines []string
	for _, x := range f {
		lines = append(lines, x.String())
	}
	assert.Equal(t, []string{
		"pps_allowance_exceeded +1234: packets were shaped by the PPS allowance (bidirectional packets per second above the instance's limit)",
		"ena_srd_eligible_tx_pkts +18: packets could have used ENA Express (SRD) but went over plain ENA (24534321 of 24534339 eligible went over SRD)",
		"conntrack_allowance_available: room for tracked connections fell from 136790 to 136781",
	}, lines)
	assert.Equal(t, severityWarning, f[0].Severity)

	quiet := mustDiff(t, before, before)
	assert.Empty(t, Explain(quiet))

	reset := mustDiff(t, snap(0, Stats{{"total_resets", 0}, {"tx_timeout", 2}, {"queue_0_tx_cnt", 900}, {"ena_srd_resource_utilization", 10}}),
		snap(time.Second, Stats{{"total_resets", 1}, {"tx_timeout", 3}, {"queue_0_tx_cnt", 5}, {"ena_srd_resource_utilization", 97}}))
	f = Explain(reset)
	require.Len(t, f, 4)
	assert.Equal(t, "total_resets", f[0].Counter)
	assert.Equal(t, severityCritical, f[0].Severity)
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
	f = Explain(mustDiff(t, snap(0, many), snap(time.Second, zero)))
	require.Len(t, f, 1)
	assert.Equal(t, "10 counters", f[0].Counter)
}
