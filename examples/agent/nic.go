package main

import (
	"context"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/netperfkit/netperfkit/ethtool"
)

// startEthtool registers the ethtool statistics of the interface and, on an
// ENA interface with the SRD counters, starts the SRD coverage sampler. A
// host without ethtool (not linux, no such interface) runs without them and
// says so in the log. It returns the function that releases the client.
func startEthtool(ctx context.Context, bg *sync.WaitGroup, cfg config, m *metrics, log *slog.Logger) func() {
	iface := cfg.Iface
	if iface == "" {
		f, err := os.Open("/proc/net/route")
		if err == nil {
			iface, err = defaultRouteIface(f)
			f.Close()
		}
		if err != nil {
			log.Warn("no ethtool statistics: no -iface and no default route", "err", err)
			return func() {}
		}
	}
	c, err := ethtoolReader()
	if err != nil {
		log.Warn("no ethtool statistics", "iface", iface, "err", err)
		return func() {}
	}
	first, err := c.Snapshot(iface)
	if err != nil {
		log.Warn("no ethtool statistics", "iface", iface, "err", err)
		c.Close()
		return func() {}
	}
	m.reg.MustRegister(ethtoolCollector(c, iface))
	log.Info("exporting ethtool statistics", "iface", iface, "driver", first.Driver, "stats", len(first.Stats))
	if hasSRDCounters(first) {
		bg.Go(func() { sampleSRD(ctx, c, iface, time.Duration(cfg.SRDWindow), m, log) })
	}
	return func() { c.Close() }
}

// sampleSRD sets netperfkit_srd_coverage_ratio every window from the SRD
// counters of the window that just ended.
func sampleSRD(ctx context.Context, c *ethtool.Client, iface string, window time.Duration, m *metrics, log *slog.Logger) {
	err := c.Watch(ctx, iface, &ethtool.WatchConfig{Interval: window, OnDelta: func(d ethtool.Delta) {
		before, after := deltaSnapshots(d)
		if r, ok := srdCoverage(before, after); ok {
			m.srdRatio.WithLabelValues(iface).Set(r)
		} else {
			m.srdRatio.DeleteLabelValues(iface)
		}
	}})
	if err != nil && ctx.Err() == nil {
		log.Warn("SRD coverage sampling stopped", "iface", iface, "err", err)
	}
}

// deltaSnapshots rebuilds the two snapshots of a Delta's SRD counters,
// which srd.Coverage compares.
func deltaSnapshots(d ethtool.Delta) (before, after *ethtool.Snapshot) {
	before = &ethtool.Snapshot{Interface: d.Interface, Driver: d.Driver, Time: d.From}
	after = &ethtool.Snapshot{Interface: d.Interface, Driver: d.Driver, Time: d.To}
	for _, c := range d.Counters {
		switch c.Name {
		case "ena_srd_mode", "ena_srd_tx_pkts", "ena_srd_eligible_tx_pkts", "ena_srd_rx_pkts", "ena_srd_resource_utilization":
			before.Stats = append(before.Stats, ethtool.Stat{Name: c.Name, Value: c.Before})
			after.Stats = append(after.Stats, ethtool.Stat{Name: c.Name, Value: c.After})
		}
	}
	return before, after
}
