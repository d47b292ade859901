package ethtool_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"strings"
	"time"

	"github.com/netperfkit/netperfkit/ethtool"
)

// Two saved `ethtool -S eth0` outputs, taken 10 s apart, diffed: what grew,
// at what rate, and what it means.
func Example() {
	before, err := ethtool.ParseSnapshot(strings.NewReader(`NIC statistics:
     queue_0_tx_cnt: 1000
     pps_allowance_exceeded: 10
     bw_out_allowance_exceeded: 0
`))
	if err != nil {
		log.Fatal(err)
	}
	after, err := ethtool.ParseSnapshot(strings.NewReader(`NIC statistics:
     queue_0_tx_cnt: 51000
     pps_allowance_exceeded: 1244
     bw_out_allowance_exceeded: 0
`))
	if err != nil {
		log.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	before.Time, after.Time = t0, t0.Add(10*time.Second)
	d, err := ethtool.Diff(before, after)
	if err != nil {
		log.Fatal(err)
	}
	for _, c := range d.Changed() {
		fmt.Printf("%s +%d (%.0f/s) over %v\n", c.Name, c.Increase, c.PerSecond, d.Duration)
	}
	if a, ok := d.Allowance(); ok {
		fmt.Println("limited by:", a.Exceeded())
	}
	for _, f := range ethtool.Explain(d) {
		fmt.Println(f.Severity, f.Counter)
	}
	// Output:
	// queue_0_tx_cnt +50000 (5000/s) over 10s
	// pps_allowance_exceeded +1234 (123/s) over 10s
	// limited by: [pps_allowance_exceeded]
	// warning pps_allowance_exceeded
}

func ExampleDiff() {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	before := &ethtool.Snapshot{Time: t0, Stats: ethtool.Stats{{Name: "queue_0_tx_cnt", Value: 1000}, {Name: "tx_timeout", Value: 4}}}
	after := &ethtool.Snapshot{Time: t0.Add(2 * time.Second), Stats: ethtool.Stats{{Name: "queue_0_tx_cnt", Value: 3000}, {Name: "tx_timeout", Value: 1}}}
	d, err := ethtool.Diff(before, after)
	if err != nil {
		log.Fatal(err)
	}
	for _, c := range d.Counters {
		fmt.Printf("%s +%d (%.0f/s) reset=%v\n", c.Name, c.Increase, c.PerSecond, c.Reset)
	}
	// Output:
	// queue_0_tx_cnt +2000 (1000/s) reset=false
	// tx_timeout +0 (0/s) reset=true
}

func ExampleExplain() {
	before := &ethtool.Snapshot{Stats: ethtool.Stats{{Name: "pps_allowance_exceeded", Value: 10}, {Name: "bw_out_allowance_exceeded", Value: 0}}}
	after := &ethtool.Snapshot{Stats: ethtool.Stats{{Name: "pps_allowance_exceeded", Value: 1244}, {Name: "bw_out_allowance_exceeded", Value: 0}}}
	d, err := ethtool.Diff(before, after)
	if err != nil {
		log.Fatal(err)
	}
	for _, f := range ethtool.Explain(d) {
		fmt.Println(f)
	}
	// Output: pps_allowance_exceeded +1234: packets were shaped by the PPS allowance (bidirectional packets per second above the instance's limit)
}

func ExampleStats_Allowance() {
	snap, _ := ethtool.ParseSnapshot(strings.NewReader("pps_allowance_exceeded: 12\nbw_out_allowance_exceeded: 0\nconntrack_allowance_available: 9000\n"))
	a, ok := snap.Stats.Allowance()
	fmt.Println(ok, a.PPSExceeded, *a.ConntrackAvailable, a.Exceeded())
	// Output: true 12 9000 [pps_allowance_exceeded]
}

func ExampleGroupQueues() {
	stats := ethtool.Stats{
		{Name: "tx_timeout", Value: 0},
		{Name: "queue_0_tx_bytes", Value: 100}, {Name: "queue_0_rx_bytes", Value: 7},
		{Name: "queue_1_tx_bytes", Value: 50}, {Name: "queue_1_rx_bytes", Value: 3},
	}
	g := ethtool.GroupQueues(stats)
	tx, _ := g.Total("tx", "bytes")
	rx, _ := g.Total("rx", "bytes")
	fmt.Println(len(g.Queues), tx, rx, g.Other[0].Name)
	// Output: 4 150 10 tx_timeout
}

func ExampleParseSnapshot() {
	s, err := ethtool.ParseSnapshot(strings.NewReader(`{"interface":"eth0","driver":"ena","stats":{"ena_srd_mode":3}}`))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(s.Interface, s.Driver, s.Stats)
	// Output: eth0 ena [{ena_srd_mode 3}]
}

// Reading live statistics needs linux; it needs no privileges.
func ExampleClient_Snapshot() {
	c, err := ethtool.New()
	if err != nil {
		log.Fatal(err) // errors.ErrUnsupported outside linux
	}
	defer c.Close()
	s, err := c.Snapshot("eth0")
	if errors.Is(err, os.ErrNotExist) {
		log.Fatal(err) // no such interface, or one without statistics
	}
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(s.Driver, len(s.Stats))
}

func ExampleClient_RingParams() {
	c, err := ethtool.New()
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	r, err := c.RingParams("eth0")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("rx %d/%d tx %d/%d\n", r.Rx, r.RxMax, r.Tx, r.TxMax)
}

func ExampleClient_Watch() {
	c, err := ethtool.New()
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = c.Watch(ctx, "eth0", &ethtool.WatchConfig{
		Interval: time.Second,
		OnDelta: func(d ethtool.Delta) {
			fmt.Printf("%.0f packets/s received on queue 0\n", mustGet(d, "queue_0_rx_cnt").PerSecond)
			for _, f := range ethtool.Explain(&d) {
				fmt.Println(d.To.Format(time.TimeOnly), f)
			}
		},
	})
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		log.Fatal(err)
	}
}

func mustGet(d ethtool.Delta, name string) ethtool.Counter {
	c, _ := d.Get(name)
	return c
}

func ExampleIsGauge() {
	fmt.Println(ethtool.IsGauge("conntrack_allowance_available"), ethtool.IsGauge("pps_allowance_exceeded"))
	// Output: true false
}

func ExampleSnapshot_WriteText() {
	s := &ethtool.Snapshot{Stats: ethtool.Stats{{Name: "ena_srd_mode", Value: 3}, {Name: "ena_srd_tx_pkts", Value: 42}}}
	_ = s.WriteText(os.Stdout)
	// Output:
	// NIC statistics:
	//      ena_srd_mode: 3
	//      ena_srd_tx_pkts: 42
}
