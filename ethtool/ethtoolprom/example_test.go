package ethtoolprom_test

import (
	"log"
	"net/http"
	"os"

	"github.com/netperfkit/netperfkit/ethtool"
	"github.com/netperfkit/netperfkit/ethtool/ethtoolprom"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"
)

// An exporter that serves eth0's driver statistics with node_exporter's
// names, typed, read at every scrape.
func ExampleNewCollector() {
	c, err := ethtool.New()
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(ethtoolprom.NewCollector(c, "eth0"))
	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	log.Fatal(http.ListenAndServe("127.0.0.1:9469", nil))
}

// Saved snapshots, exposed as a scrape would see them.
func ExampleNewSnapshotCollector() {
	s := &ethtool.Snapshot{Interface: "eth0", Driver: "ena", Stats: ethtool.Stats{
		{Name: "bw_out_allowance_exceeded", Value: 12}, {Name: "ena_srd_mode", Value: 3},
	}}
	reg := prometheus.NewRegistry()
	reg.MustRegister(ethtoolprom.NewSnapshotCollector(s))
	mfs, err := reg.Gather()
	if err != nil {
		log.Fatal(err)
	}
	enc := expfmt.NewEncoder(os.Stdout, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs[:2] {
		_ = enc.Encode(mf)
	}
	// Output:
	// # HELP node_ethtool_bw_out_allowance_exceeded Network interface bw_out_allowance_exceeded
	// # TYPE node_ethtool_bw_out_allowance_exceeded counter
	// node_ethtool_bw_out_allowance_exceeded{device="eth0"} 12
	// # HELP node_ethtool_ena_srd_mode Network interface ena_srd_mode
	// # TYPE node_ethtool_ena_srd_mode gauge
	// node_ethtool_ena_srd_mode{device="eth0"} 3
}

func ExampleWrite() {
	s := &ethtool.Snapshot{Interface: "eth0", Driver: "ena", Stats: ethtool.Stats{{Name: "pps_allowance_exceeded", Value: 3}}}
	_ = ethtoolprom.Write(os.Stdout, s)
	// Output:
	// # HELP node_ethtool_info A metric with a constant '1' value labeled by bus_info, device, driver, expansion_rom_version, firmware_version, version.
	// # TYPE node_ethtool_info gauge
	// node_ethtool_info{bus_info="",device="eth0",driver="ena",expansion_rom_version="",firmware_version="",version=""} 1
	// # HELP node_ethtool_pps_allowance_exceeded Network interface pps_allowance_exceeded
	// # TYPE node_ethtool_pps_allowance_exceeded counter
	// node_ethtool_pps_allowance_exceeded{device="eth0"} 3
}
