//go:build unix

package ethtoolprom

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/ethtool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// ena350 is an ENA snapshot of 350 statistics: the 335 of a real 2.17
// driver plus 15 more queue counters, the size the agent's scrape budget is
// stated for.
func ena350(b *testing.B) *ethtool.Snapshot {
	snap, err := ethtool.ParseSnapshot(bytes.NewReader(readFixture(b, "ena-2.17-same-az-after.txt")))
	require.NoError(b, err)
	st := snap.Stats
	for i := 0; len(st) < 350; i++ {
		st = append(st, ethtool.Stat{Name: fmt.Sprintf("queue_%d_extra_cnt", 100+i), Value: uint64(i)})
	}
	return &ethtool.Snapshot{Time: time.Unix(1700000000, 0), Interface: "eth0", Driver: "ena", DriverVersion: "2.17.0", Stats: st}
}

// BenchmarkCollectorScrape350 is one scrape of a 350-statistic ENA
// interface as promhttp serves it: gather from a registry holding the
// Collector, then encode the text format. Besides wall time it reports
// cpu-ns/op, the process CPU time (getrusage) per scrape, which a busy shared
// machine inflates less than wall time.
func BenchmarkCollectorScrape350(b *testing.B) {
	s := ena350(b)
	require.Len(b, s.Stats, 350)
	reg := prometheus.NewRegistry()
	require.NoError(b, reg.Register(NewSnapshotCollector(s)))
	var buf bytes.Buffer
	b.ReportAllocs()
	cpu0 := cpuTime(b)
	for b.Loop() {
		buf.Reset()
		mfs, err := reg.Gather()
		if err != nil {
			b.Fatal(err)
		}
		enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
		for _, mf := range mfs {
			if err := enc.Encode(mf); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N), "cpu-ns/op")
}

// readFixture reads one of ethtool's `ethtool -S` fixtures.
func readFixture(b *testing.B, name string) []byte {
	data, err := os.ReadFile(filepath.Join("..", "testdata", name))
	require.NoError(b, err)
	return data
}

// BenchmarkWrite renders one 335-statistic ENA snapshot in the Prometheus
// text format, what an exporter does on every scrape.
func BenchmarkWrite(b *testing.B) {
	snap, err := ethtool.ParseSnapshot(bytes.NewReader(readFixture(b, "ena-2.17-same-az-after.txt")))
	require.NoError(b, err)
	st := snap.Stats
	s := &ethtool.Snapshot{Time: time.Unix(1700000000, 0), Interface: "eth0", Driver: "ena", DriverVersion: "2.17.0", Stats: st}
	var buf bytes.Buffer
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		if err := Write(&buf, s); err != nil {
			b.Fatal(err)
		}
	}
}

// cpuTime is the user plus system CPU time of the process so far.
func cpuTime(b *testing.B) time.Duration {
	var ru unix.Rusage
	require.NoError(b, unix.Getrusage(unix.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkCollectorGather350 is the gather half of a scrape alone.
func BenchmarkCollectorGather350(b *testing.B) {
	reg := prometheus.NewRegistry()
	require.NoError(b, reg.Register(NewSnapshotCollector(ena350(b))))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := reg.Gather(); err != nil {
			b.Fatal(err)
		}
	}
}
