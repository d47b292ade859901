package ethtoolprom

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/netperfkit/netperfkit/ethtool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func gather(t testing.TB, c prometheus.Collector) map[string]*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(c))
	mfs, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

// reader plays ethtool.Client.SnapshotInto for eth0 with n statistics
// (stat_i = 100+i) and counts the driver information reads; every other
// interface is missing.
type reader struct {
	n, driverReads int
}

func fakeReader(n int) *reader { return &reader{n: n} }

func (r *reader) read(iface string, s *ethtool.Snapshot) error {
	if iface != "eth0" {
		return fmt.Errorf("ethtool: GSSET_INFO %s: %w", iface, ethtool.ErrNoInterface)
	}
	if s.Interface != iface {
		r.driverReads++
		s.Driver = "fake"
	}
	s.Interface = iface
	s.Stats = s.Stats[:0]
	for i := range r.n {
		s.Stats = append(s.Stats, ethtool.Stat{Name: fmt.Sprintf("stat_%d", i), Value: uint64(100 + i)})
	}
	return nil
}

func TestCollectorLiveReadErrorsKeepOtherInterfaces(t *testing.T) {
	r := fakeReader(2)
	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(newReadCollector(r.read, []string{"eth0", "nope0"})))
	for range 2 { // the second scrape reuses the snapshot buffers
		mfs, err := reg.Gather()
		require.Error(t, err, "the missing interface is reported")
		assert.Contains(t, err.Error(), "nope0")
		assert.ErrorContains(t, err, "ethtoolprom: collect nope0")
		got := map[string]float64{}
		for _, mf := range mfs {
			got[mf.GetName()] = mf.GetMetric()[0].GetCounter().GetValue() + mf.GetMetric()[0].GetGauge().GetValue()
		}
		assert.Equal(t, map[string]float64{"node_ethtool_info": 1, "node_ethtool_stat_0": 100, "node_ethtool_stat_1": 101}, got)
	}
	assert.Equal(t, 1, r.driverReads, "the snapshot of eth0 is reused between scrapes")
}

func TestCollectorNilInputs(t *testing.T) {
	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(NewCollector(nil, "eth0")))
	_, err := reg.Gather()
	assert.ErrorContains(t, err, "nil *ethtool.Client")

	reg = prometheus.NewRegistry()
	require.NoError(t, reg.Register(NewSnapshotCollector(nil, &ethtool.Snapshot{Interface: "eth0", Stats: ethtool.Stats{{Name: "x", Value: 1}}})))
	mfs, err := reg.Gather()
	require.NoError(t, err, "a nil snapshot is skipped")
	assert.Len(t, mfs, 2)

	var zero Collector
	ch := make(chan prometheus.Metric, 1)
	zero.Collect(ch)
	(*Collector)(nil).Collect(ch)
	NewSnapshotCollector(&ethtool.Snapshot{Stats: ethtool.Stats{{Name: "x", Value: 1}}}).Collect(nil)
	assert.Empty(t, ch, "a zero or nil Collector collects nothing")
	assert.ErrorContains(t, Write(nil), "nil io.Writer w")
}

func TestCollectorTypesCountersAndGauges(t *testing.T) {
	s := &ethtool.Snapshot{Interface: "eth0", Driver: "ena", Stats: ethtool.Stats{
		{Name: "rx_bytes", Value: 10}, {Name: "ena_srd_mode", Value: 3}, {Name: "conntrack_allowance_available", Value: 9000},
		{Name: "queue_0_tx_cnt", Value: 7}, {Name: "peer_ifindex", Value: 4},
	}}
	mfs := gather(t, NewSnapshotCollector(s))
	for name, typ := range map[string]dto.MetricType{
		"node_ethtool_info":                          dto.MetricType_GAUGE,
		"node_ethtool_received_bytes_total":          dto.MetricType_COUNTER,
		"node_ethtool_ena_srd_mode":                  dto.MetricType_GAUGE,
		"node_ethtool_conntrack_allowance_available": dto.MetricType_GAUGE,
		"node_ethtool_queue_0_transmitted_cnt":       dto.MetricType_COUNTER,
		"node_ethtool_peer_ifindex":                  dto.MetricType_GAUGE,
	} {
		require.Contains(t, mfs, name)
		assert.Equal(t, typ, mfs[name].GetType(), name)
	}
	assert.Len(t, mfs, 6)
	for _, mf := range mfs {
		assert.NotEqual(t, dto.MetricType_UNTYPED, mf.GetType(), mf.GetName())
	}
	m := mfs["node_ethtool_ena_srd_mode"].GetMetric()[0]
	assert.Equal(t, 3.0, m.GetGauge().GetValue())
	require.Len(t, m.GetLabel(), 1)
	assert.Equal(t, "device", m.GetLabel()[0].GetName())
	assert.Equal(t, "eth0", m.GetLabel()[0].GetValue())
	assert.Equal(t, 10.0, mfs["node_ethtool_received_bytes_total"].GetMetric()[0].GetCounter().GetValue())
	assert.Equal(t, "Network interface bytes received", mfs["node_ethtool_received_bytes_total"].GetHelp())
}

func TestCollectorDropsCollidingNamesLikeNodeExporter(t *testing.T) {
	// "rx-drops" and "rx_drops" both become node_ethtool_received_drops:
	// node_exporter leaves both out; "tx.x" has no twin and stays.
	s := &ethtool.Snapshot{Interface: "eth0", Stats: ethtool.Stats{{Name: "rx-drops", Value: 1}, {Name: "rx_drops", Value: 2}, {Name: "tx.x", Value: 3}}}
	mfs := gather(t, NewSnapshotCollector(s))
	assert.NotContains(t, mfs, "node_ethtool_received_drops")
	require.Contains(t, mfs, "node_ethtool_transmitted_x")
	assert.Equal(t, "Network interface tx_x", mfs["node_ethtool_transmitted_x"].GetHelp())
}

func TestCollectorDropsStatisticNamedInfo(t *testing.T) {
	// "info" and ":Info" would both be node_ethtool_info, the driver
	// information metric: they are left out, the rest is scraped.
	for _, stat := range []string{"info", ":Info"} {
		s := &ethtool.Snapshot{Interface: "eth0", Driver: "x", Stats: ethtool.Stats{{Name: stat, Value: 7}, {Name: "rx_packets", Value: 1}}}
		mfs := gather(t, NewSnapshotCollector(s))
		require.Contains(t, mfs, "node_ethtool_info", stat)
		info := mfs["node_ethtool_info"]
		assert.Equal(t, dto.MetricType_GAUGE, info.GetType(), stat)
		require.Len(t, info.GetMetric(), 1, stat)
		assert.Equal(t, 1.0, info.GetMetric()[0].GetGauge().GetValue(), stat)
		assert.Contains(t, mfs, "node_ethtool_received_packets_total", stat)

		var buf bytes.Buffer
		require.NoError(t, Write(&buf, s), stat)
		assert.NotContains(t, buf.String(), "} 7\n", stat)
	}
}

func TestCollectorMetricNameFromTwoSpellingsAcrossDevices(t *testing.T) {
	// Two devices spell one statistic differently: one family, one help.
	a := &ethtool.Snapshot{Interface: "eth0", Stats: ethtool.Stats{{Name: "Tx Errors Phy", Value: 1}}}
	b := &ethtool.Snapshot{Interface: "eth1", Stats: ethtool.Stats{{Name: "tx_errors_phy", Value: 2}}}
	mfs := gather(t, NewSnapshotCollector(a, b))
	require.Contains(t, mfs, "node_ethtool_transmitted_errors_phy")
	assert.Len(t, mfs["node_ethtool_transmitted_errors_phy"].GetMetric(), 2)
}

func TestCollectorInvalidUTF8FailsScrapeWithoutPanic(t *testing.T) {
	s := &ethtool.Snapshot{Interface: "eth\xff", Stats: ethtool.Stats{{Name: "x", Value: 1}}}
	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(NewSnapshotCollector(s)))
	_, err := reg.Gather()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ethtoolprom: ")
}

func TestCollectorTextMatchesWrite(t *testing.T) {
	s := &ethtool.Snapshot{Interface: "eth0", Driver: "ena", Stats: ethtool.Stats{{Name: "rx_bytes", Value: 10}, {Name: "ena_srd_mode", Value: 1}}}
	var buf bytes.Buffer
	require.NoError(t, Write(&buf, s))
	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(NewSnapshotCollector(s)))
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(buf.String())))
	assert.Contains(t, buf.String(), "# TYPE node_ethtool_ena_srd_mode gauge\nnode_ethtool_ena_srd_mode{device=\"eth0\"} 1\n")
	assert.NotContains(t, buf.String(), "untyped")
}

func TestWriteSameDeviceTwiceIsAnError(t *testing.T) {
	s := &ethtool.Snapshot{Interface: "eth0", Stats: ethtool.Stats{{Name: "x", Value: 1}}}
	err := Write(&bytes.Buffer{}, s, s)
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), "ethtoolprom: "), err.Error())
}

// TestCollectorReusesNamesBetweenScrapes checks that a second scrape of the
// same statistics creates no new descriptor (the cache is what keeps a scrape
// of 350 ENA counters cheap) and that values follow the snapshot.
func TestCollectorReusesNamesBetweenScrapes(t *testing.T) {
	s := &ethtool.Snapshot{Interface: "eth0", Stats: ethtool.Stats{{Name: "rx_bytes", Value: 1}, {Name: "queue_0_tx_cnt", Value: 2}}}
	c := NewSnapshotCollector(s)
	gather(t, c)
	d := c.entries["node_ethtool_received_bytes_total"]
	s.Stats[0].Value = 5
	mfs := gather(t, c)
	assert.Same(t, d, c.entries["node_ethtool_received_bytes_total"])
	assert.Equal(t, 5.0, mfs["node_ethtool_received_bytes_total"].GetMetric()[0].GetCounter().GetValue())
}

func FuzzCollector(f *testing.F) {
	for _, s := range []string{"rx_bytes", "Queue[0] AllocFails", "[3]: tx_bytes", "", "__", "\xff", "tx-tx", "info", "_Info"} {
		f.Add(s, "eth0", uint64(3))
	}
	f.Fuzz(func(t *testing.T, stat, iface string, v uint64) {
		s := &ethtool.Snapshot{Time: time.Unix(0, 0), Interface: iface, Stats: ethtool.Stats{{Name: stat, Value: v}, {Name: "rx_bytes", Value: v}}}
		reg := prometheus.NewRegistry()
		require.NoError(t, reg.Register(NewSnapshotCollector(s)))
		mfs, err := reg.Gather()
		if !utf8.ValidString(iface) {
			require.Error(t, err) // an invalid label value is reported, never a panic
			return
		}
		require.NoError(t, err, "no statistic name fails the scrape")
		for _, mf := range mfs {
			require.True(t, strings.HasPrefix(mf.GetName(), "node_ethtool_"), mf.GetName())
			require.NotEqual(t, dto.MetricType_UNTYPED, mf.GetType())
		}
	})
}
