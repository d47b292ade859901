package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/netperfkit/netperfkit/cache/median"
	"github.com/netperfkit/netperfkit/latency"
)

// Comparison is what -compare prints with -json: every metric the two
// reports share, side by side.
type Comparison struct {
	Old     string          `json:"old"`
	New     string          `json:"new"`
	Metrics []MetricCompare `json:"metrics"`
}

// MetricCompare is one metric of both runs. Verdict is "better" or "worse"
// when the Mann-Whitney U test of the two runs' repetitions finds them
// different (p < 0.05, as benchstat), "~" when it does not, and "n=1" when
// either side has one repetition, so that nothing can say whether the
// difference is noise. Test holds the test and benchstat's notation.
type MetricCompare struct {
	Name string `json:"name"`
	Unit string `json:"unit"`
	// HigherIsBetter says which direction "better" is.
	HigherIsBetter bool                   `json:"higher_is_better"`
	Old            latency.Range[float64] `json:"old"`
	New            latency.Range[float64] `json:"new"`
	// Ratio is New.Median / Old.Median (0 when Old.Median is 0).
	Ratio   float64 `json:"ratio"`
	Verdict string  `json:"verdict"`
	// Test compares the repetitions (nil when a side kept none).
	Test *RunTest `json:"test,omitempty"`
}

// metric is one value a report holds.
type metric struct {
	name, unit string
	higher     bool
	r          latency.Range[float64]
	// samples are the repetitions' values (one for a single run).
	samples []float64
}

func one(v float64) latency.Range[float64] {
	return latency.Range[float64]{Median: v, Min: v, Max: v, N: 1}
}

// metricsOf lists the comparable metrics of rep, named so that the same
// measurement in another report has the same name.
func metricsOf(rep *Report) []metric {
	var out []metric
	add := func(name, unit string, higher bool, r latency.Range[float64], samples ...float64) {
		if r.N > 0 {
			if len(samples) == 0 && r.N == 1 {
				samples = []float64{r.Median}
			}
			out = append(out, metric{name, unit, higher, r, samples})
		}
	}
	if p := rep.Paths; p != nil && p.Result != nil {
		for _, t := range p.Targets {
			add("E1 "+t.Name+" 1 flow", "Gbit/s", true, one(t.SingleFlowBitsPerSecond/1e9))
			add(fmt.Sprintf("E1 %s %d streams", t.Name, t.Streams), "Gbit/s", true, one(t.MultiStreamBitsPerSecond/1e9))
			if t.RTT.Observations > 0 {
				add("E1 "+t.Name+" RTT p50", "us", false, one(float64(t.RTT.P50)/1e3))
				add("E1 "+t.Name+" RTT p99", "us", false, one(float64(t.RTT.P99)/1e3))
				add("E1 "+t.Name+" RTT p99.9", "us", false, one(float64(t.RTT.P999)/1e3))
			}
			if l := p.loaded(t.Name); l != nil && l.RTT.Observations > 0 {
				out = append(out, loadedMetrics(t.Name, l)...)
			}
			if t.SRD.HasSRD() && t.SRD.EligibleTxPktsDelta > 0 {
				add("E1 "+t.Name+" SRD coverage", "%", true, one(100*t.SRD.Coverage))
			}
		}
	}
	if m := rep.Matrix; m != nil {
		for _, r := range m.Rows {
			if r.Error != "" {
				continue
			}
			name := "E2 " + r.Scenario + " " + r.Direction
			add(name+" received", "Gbit/s", true, one(r.ReceivedBitsPerSecond/1e9))
			if r.Protocol == "udp" {
				add(name+" loss", "%", false, one(r.LostPercent))
			} else if r.Retransmits >= 0 {
				add(name+" retransmits", "", false, one(float64(r.Retransmits)))
			}
		}
	}
	if c := rep.Cache; c != nil {
		for _, ce := range c.Endpoints {
			if ce.Medians != nil {
				add("E3 "+ce.Label+" connect phases total p50", "us", false, one(ce.Medians.TotalUs))
			}
			for _, w := range ce.Workloads {
				for _, a := range []*median.Result{w.Pool, w.Connect} {
					if a == nil || modeFailure(a) != nil {
						continue // a failed mode's latencies are its errors'
					}
					name := fmt.Sprintf("E3 %s %s %s", ce.Label, w.Engine, a.Mode)
					add(name+" p50", "us", false, usRange(a.P50), latencyValues(a, runP50Us)...)
					add(name+" p99", "us", false, usRange(a.P99), latencyValues(a, runP99Us)...)
					add(name+" ops/s", "ops/s", true, a.OpsPerSec, runValues(a, runOps)...)
				}
			}
		}
	}
	return out
}

// compareReports relates the metrics both reports have, in the old
// report's order.
func compareReports(oldRep, newRep *Report, oldLabel, newLabel string) *Comparison {
	c := &Comparison{Old: oldLabel, New: newLabel, Metrics: []MetricCompare{}}
	newBy := map[string]metric{}
	for _, m := range metricsOf(newRep) {
		newBy[m.name] = m
	}
	for _, o := range metricsOf(oldRep) {
		n, ok := newBy[o.name]
		if !ok {
			continue
		}
		test := compareRuns(o.samples, n.samples)
		mc := MetricCompare{Name: o.name, Unit: o.unit, HigherIsBetter: o.higher, Old: o.r, New: n.r, Verdict: verdict(o.r, n.r, test, o.higher), Test: test}
		if o.r.Median != 0 {
			mc.Ratio = n.r.Median / o.r.Median
		}
		c.Metrics = append(c.Metrics, mc)
	}
	return c
}

// verdict reads the U test: a change only where the runs differ at
// alpha 0.05, in the metric's direction.
func verdict(o, n latency.Range[float64], t *RunTest, higher bool) string {
	switch {
	case o.N < 2 || n.N < 2:
		return "n=1"
	case t == nil || !t.Significant || t.NewMedian == t.OldMedian:
		return "~"
	case (t.NewMedian > t.OldMedian) == higher:
		return "better"
	}
	return "worse"
}

func readReport(name string) (*Report, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	var rep Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &rep, nil
}

// runCompare implements -compare OLD.json NEW.json.
func runCompare(files []string, labels string, jsonOut bool, stdout io.Writer) error {
	if len(files) != 2 {
		return fmt.Errorf("-compare takes two report.json files, OLD and NEW; got %d", len(files))
	}
	names := splitList(labels)
	switch len(names) {
	case 0:
		names = files
	case 2:
	default:
		return fmt.Errorf("-label: want OLD,NEW, got %q", labels)
	}
	oldRep, err := readReport(files[0])
	if err != nil {
		return err
	}
	newRep, err := readReport(files[1])
	if err != nil {
		return err
	}
	c := compareReports(oldRep, newRep, names[0], names[1])
	if jsonOut {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(c)
	}
	return writeComparison(stdout, c)
}

func writeComparison(w io.Writer, c *Comparison) error {
	fmt.Fprintf(w, "compare: old = %s, new = %s (median [min-max] of each run's repetitions; vs old: Mann-Whitney U test at alpha 0.05, as benchstat)\n", c.Old, c.New)
	t := newTable(w, "metric", "unit", "old", "new", "new ÷ old", "verdict", "vs old")
	changed, single := 0, 0
	var tests []*RunTest
	for _, m := range c.Metrics {
		tests = append(tests, m.Test)
		if m.Verdict == "n=1" {
			single++
		}
		v := m.Verdict
		if v == "better" || v == "worse" {
			v = strings.ToUpper(v)
			changed++
		}
		ratio := "-"
		if m.Ratio != 0 {
			ratio = fmt.Sprintf("%.2fx", m.Ratio)
		}
		t.row(m.Name, m.Unit, compactRange(m.Old), compactRange(m.New), ratio, v, m.Test.cell())
	}
	if err := t.flush(); err != nil {
		return err
	}
	if n := tooFewNote(tests...); n != "" {
		fmt.Fprintln(w, n)
	}
	_, err := fmt.Fprintf(w, "%d of %d metrics changed (p < 0.05); %d measured once per report, where no test can tell (n=1)\n", changed, len(c.Metrics), single)
	return err
}

// compactRange prints one value, or a median with its range.
func compactRange(r latency.Range[float64]) string {
	f := func(v float64) string {
		if v > -1000 && v < 1000 {
			return fmt.Sprintf("%.3g", v)
		}
		return fmt.Sprintf("%.0f", v)
	}
	if r.N < 2 {
		return f(r.Median)
	}
	return fmt.Sprintf("%s [%s-%s]", f(r.Median), f(r.Min), f(r.Max))
}
