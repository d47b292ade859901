package srd_test

import (
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/netperfkit/netperfkit/ethtool"
	"github.com/netperfkit/netperfkit/srd"
)

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
	fmt.Println(nis[0].ID, nis[0].EnaSrd.Mode())
	// Output: eni-1 ENA Express on, UDP on
}

func ExampleParseInstanceTypes() {
	its, err := srd.ParseInstanceTypes(strings.NewReader(`{"InstanceTypes":[{"InstanceType":"c8gn.8xlarge","NetworkInfo":{"EnaSrdSupported":true}}]}`))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(its[0].InstanceType, its[0].EnaSrdSupported)
	// Output: c8gn.8xlarge true
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
	c := srd.SpecCheck(srd.FindByMAC(nis, "0e:00:00:00:00:01"), srd.CoverageReport{Mode: 3})
	fmt.Println(c.Status, c.Value, "want", c.Expect)
	// Output: fail 3 (ENA Express on, UDP on) want 1 (ENA Express on, UDP off) as eni-1's EnaSrdSpecification says
}
