//go:build linux

package ethtoolprom

import (
	"bytes"
	"sync"
	"testing"

	"github.com/netperfkit/netperfkit/ethtool"
	"github.com/netperfkit/netperfkit/ethtool/ethtooltest"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func clientIn(t testing.TB, path string) *ethtool.Client {
	t.Helper()
	var c *ethtool.Client
	require.NoError(t, ethtooltest.InNetns(path, func() error {
		var err error
		c, err = ethtool.New()
		return err
	}))
	t.Cleanup(func() { _ = c.Close() })
	return c
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
	assert.Equal(t, float64(v.PeerIndex(t)), pi.GetMetric()[0].GetGauge().GetValue())
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
	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(newReadCollector(fakeReader(20).read, []string{"eth0", "gone0"})))
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
