//go:build linux

package ethtool

import (
	"bytes"
	"sync"
	"testing"

	"github.com/netperfkit/netperfkit/ethtool/ethtooltest"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestCollectorLiveReadErrorsKeepOtherInterfaces(t *testing.T) {
	k := &fakeKernel{counts: []int{2}, actual: func() int { return 2 }}
	c := NewCollector(fakeClient(k), "eth0", "nope0")
	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(c))
	for range 2 { // the second scrape reuses the snapshot buffers
		mfs, err := reg.Gather()
		require.Error(t, err, "the missing interface is reported")
		assert.Contains(t, err.Error(), "nope0")
		got := map[string]float64{}
		for _, mf := range mfs {
			got[mf.GetName()] = mf.GetMetric()[0].GetCounter().GetValue() + mf.GetMetric()[0].GetGauge().GetValue()
		}
		assert.Equal(t, map[string]float64{"node_ethtool_info": 1, "node_ethtool_stat_0": 100, "node_ethtool_stat_1": 101}, got)
	}
	assert.Equal(t, 1, k.calls[unix.ETHTOOL_GDRVINFO], "driver information is read once (ETHTOOL_GDRVINFO)")
}

// TestCollectorVeth scrapes a real veth device: its peer_ifindex statistic
// is a gauge holding the peer's interface index.
func TestCollectorVeth(t *testing.T) {
	v := ethtooltest.NewVeth(t)
	cl := clientIn(t, v.NetnsPath())
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(NewCollector(cl, v.Name)))
	mfs, err := reg.Gather()
	require.NoError(t, err)
	byName := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		byName[mf.GetName()] = mf
		assert.NotEqual(t, dto.MetricType_UNTYPED, mf.GetType(), mf.GetName())
	}
	require.Contains(t, byName, "node_ethtool_peer_ifindex")
	pi := byName["node_ethtool_peer_ifindex"]
	assert.Equal(t, dto.MetricType_GAUGE, pi.GetType())
	assert.Equal(t, float64(v.PeerIndex), pi.GetMetric()[0].GetGauge().GetValue())
	require.Contains(t, byName, "node_ethtool_info")
	info := map[string]string{}
	for _, l := range byName["node_ethtool_info"].GetMetric()[0].GetLabel() {
		info[l.GetName()] = l.GetValue()
	}
	assert.Equal(t, "veth", info["driver"])
	assert.Equal(t, v.Name, info["device"])
}

// TestCollectorConcurrentScrapes gathers and encodes from several
// goroutines at once: under -race it shows that the metric families a
// scrape holds after Collect returns share nothing the next scrape writes.
func TestCollectorConcurrentScrapes(t *testing.T) {
	k := &fakeKernel{counts: []int{20}, actual: func() int { return 20 }}
	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(NewCollector(fakeClient(k), "eth0", "gone0")))
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 20 {
				mfs, err := reg.Gather()
				if !assert.Error(t, err) {
					return
				}
				var buf bytes.Buffer
				for _, mf := range mfs {
					_, _ = expfmt.MetricFamilyToText(&buf, mf)
				}
				assert.Contains(t, buf.String(), `node_ethtool_stat_19{device="eth0"} 119`)
			}
		})
	}
	wg.Wait()
}
