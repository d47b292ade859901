package ethtool

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func readFixture(b *testing.B, name string) []byte {
	data, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(b, err)
	return data
}

// BenchmarkParseText parses a 336-line ENA 2.17 `ethtool -S` output
// (header + 335 statistics, 8 queues).
func BenchmarkParseText(b *testing.B) {
	data := readFixture(b, "ena-2.17-same-az-after.txt")
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := parseStats(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseAndDiff parses two ENA snapshots and computes their Delta,
// what a script does with two saved `ethtool -S` outputs.
func BenchmarkParseAndDiff(b *testing.B) {
	before, after := readFixture(b, "ena-2.17-same-az-before.txt"), readFixture(b, "ena-2.17-same-az-after.txt")
	t0 := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		sb, err := parseStats(bytes.NewReader(before))
		if err != nil {
			b.Fatal(err)
		}
		sa, err := parseStats(bytes.NewReader(after))
		if err != nil {
			b.Fatal(err)
		}
		d, err := Diff(&Snapshot{Time: t0, Stats: sb}, &Snapshot{Time: t0.Add(time.Second), Stats: sa})
		if err != nil || increase(d, "ena_srd_tx_pkts") != 28195047 {
			b.Fatal("wrong delta")
		}
	}
}

// BenchmarkDiff computes a Delta of two 335-counter ENA snapshots.
func BenchmarkDiff(b *testing.B) {
	before, after := snapFromFixture(b, "ena-2.17-same-az-before.txt", 0), snapFromFixture(b, "ena-2.17-same-az-after.txt", time.Second)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Diff(before, after); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDeltaReuse is Watch's per-sample work: a Delta of two 335-counter
// snapshots into a reused Delta.
func BenchmarkDeltaReuse(b *testing.B) {
	before, after := snapFromFixture(b, "ena-2.17-same-az-before.txt", 0), snapFromFixture(b, "ena-2.17-same-az-after.txt", time.Second)
	var d Delta
	b.ReportAllocs()
	for b.Loop() {
		d.compute(before, after)
	}
}

func snapFromFixture(b *testing.B, name string, at time.Duration) *Snapshot {
	s, err := parseStats(bytes.NewReader(readFixture(b, name)))
	require.NoError(b, err)
	return &Snapshot{Time: time.Unix(0, 0).Add(at), Stats: s}
}
