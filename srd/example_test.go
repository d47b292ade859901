package srd_test

import (
	"fmt"
	"log"
	"os"
	"strings"
	"time"

	"github.com/netperfkit/netperfkit/ethtool"
	"github.com/netperfkit/netperfkit/srd"
)

// Two saved `ethtool -S eth0` outputs of an ENA Express interface, taken
// around a cross-AZ transfer: SRD's coverage and the allowance that limited
// the window.
func Example() {
	before, err := ethtool.ParseSnapshot(strings.NewReader(`NIC statistics:
     ena_srd_mode: 3
     ena_srd_tx_pkts: 1000
     ena_srd_eligible_tx_pkts: 1000
     ena_srd_rx_pkts: 900
     ena_srd_resource_utilization: 1
     pps_allowance_exceeded: 0
`))
	if err != nil {
		log.Fatal(err)
	}
	after, err := ethtool.ParseSnapshot(strings.NewReader(`NIC statistics:
     ena_srd_mode: 3
     ena_srd_tx_pkts: 2001000
     ena_srd_eligible_tx_pkts: 2011000
     ena_srd_rx_pkts: 1900900
     ena_srd_resource_utilization: 2
     pps_allowance_exceeded: 493
`))
	if err != nil {
		log.Fatal(err)
	}
	w := srd.NewWindow(before, after)
	fmt.Println(w.Verdict, w.Percent()+"%", "limited by", w.LimitedByText())
	fmt.Println(w.Reason)
	// Output:
	// partial_fallback 99.502% limited by pps
	// 10000 of 2010000 eligible packets (0.498%) fell back to plain ENA: likely packets larger than the SRD MTU of 8900, a peer without ENA Express, or a live update
}

func ExampleExpressMode_String() {
	fmt.Println(srd.ExpressMode(3))
	fmt.Println(srd.ExpressMode(1))
	fmt.Println(srd.ExpressMode(11))
	// Output:
	// ENA Express on, UDP on
	// ENA Express on, UDP off
	// ENA Express on, UDP on, unknown bits 0x8
}

func ExampleCoverage() {
	at := func(sec int, tx, eligible uint64) *ethtool.Snapshot {
		return &ethtool.Snapshot{
			Time: time.Unix(int64(sec), 0), Interface: "eth0",
			Stats: ethtool.Stats{
				{Name: "ena_srd_mode", Value: 3}, {Name: "ena_srd_tx_pkts", Value: tx},
				{Name: "ena_srd_eligible_tx_pkts", Value: eligible}, {Name: "ena_srd_rx_pkts", Value: 0},
				{Name: "ena_srd_resource_utilization", Value: 0},
			},
		}
	}
	r := srd.Coverage(at(0, 1000, 1000), at(15, 1000+28195047, 1000+28195063))
	fmt.Println(r.Verdict, r.TxPktsDelta, r.EligibleTxPktsDelta, r.Mode)
	fmt.Println(r.Reason)
	// Output:
	// srd_carried_traffic 28195047 28195063 ENA Express on, UDP on
	// SRD carried 28195047 of 28195063 eligible packets (99.999943%)
}

func ExampleParseNetworkInterfaces() {
	out := `{"NetworkInterfaces": [{"NetworkInterfaceId": "eni-1",
	  "Attachment": {"DeviceIndex": 0, "EnaSrdSpecification": {"EnaSrdEnabled": true,
	    "EnaSrdUdpSpecification": {"EnaSrdUdpEnabled": true}}}}]}`
	nis, err := srd.ParseNetworkInterfaces(strings.NewReader(out))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(nis[0].ID, nis[0].EnaSrd)
	// Output: eni-1 ENA Express on, UDP on
}

func ExampleParseInstanceTypes() {
	its, err := srd.ParseInstanceTypes(strings.NewReader(`{"InstanceTypes":[{"InstanceType":"c8gn.8xlarge","NetworkInfo":{"EnaSrdSupported":true}}]}`))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(its["c8gn.8xlarge"])
	// Output: true
}

func ExampleReadiness() {
	checks, err := srd.Readiness("eth0", &srd.ReadinessConfig{HighRTT: true})
	if err != nil {
		log.Fatal(err)
	}
	for _, c := range checks {
		fmt.Printf("%-4s %s = %s (want %s)\n", c.Status, c.Name, c.Value, c.Expect)
	}
}

func ExampleSpecCheck() {
	nis, err := srd.ParseNetworkInterfaces(strings.NewReader(`{"NetworkInterfaces":[{"NetworkInterfaceId":"eni-1","MacAddress":"0e:00:00:00:00:01",
	  "Attachment":{"EnaSrdSpecification":{"EnaSrdEnabled":true,"EnaSrdUdpSpecification":{"EnaSrdUdpEnabled":false}}}}]}`))
	if err != nil {
		log.Fatal(err)
	}
	c := srd.SpecCheck(nis, "0e:00:00:00:00:01", srd.CoverageReport{Mode: 3})
	fmt.Println(c.Status, c.Value, "want", c.Expect)
	// Output: fail 3 (ENA Express on, UDP on) want 1 (ENA Express on, UDP off) as eni-1's EnaSrdSpecification says
}

// The README's ethtool and srd snippet, on two saved `ethtool -S` outputs of
// an ENA Express interface around a cross-AZ transfer (internal/readme keeps
// the two texts the same).
func Example_readme() {
	beforeText, err := os.Open("../ethtool/testdata/ena-2.17-cross-az-before.txt")
	if err != nil {
		log.Fatal(err)
	}
	defer beforeText.Close()
	afterText, err := os.Open("../ethtool/testdata/ena-2.17-cross-az-after.txt")
	if err != nil {
		log.Fatal(err)
	}
	defer afterText.Close()

	// README begin
	before, err := ethtool.ParseSnapshot(beforeText) // or live: ethtool.New(), then Client.Snapshot("ens5")
	if err != nil {
		log.Fatal(err)
	}
	after, err := ethtool.ParseSnapshot(afterText)
	if err != nil {
		log.Fatal(err)
	}
	d, err := ethtool.Diff(before, after) // an error when the snapshots are of two interfaces
	if err != nil {
		log.Fatal(err)
	}
	for _, f := range ethtool.Explain(d) {
		fmt.Println(f)
	}
	cov := srd.Coverage(before, after)
	fmt.Println(cov.Verdict, cov.Coverage, cov.Mode)
	// README end

	// Output:
	// pps_allowance_exceeded +1234: packets were shaped by the PPS allowance (bidirectional packets per second above the instance's limit)
	// ena_srd_eligible_tx_pkts +18: packets could have used ENA Express (SRD) but went over plain ENA (24534321 of 24534339 eligible went over SRD)
	// conntrack_allowance_available: room for tracked connections fell from 136790 to 136781
	// srd_carried_traffic 0.9999992663344222 ENA Express on, UDP on
}
