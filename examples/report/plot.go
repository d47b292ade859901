package main

import (
	"errors"
	"fmt"
	"image/color"
	"math"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/netperfkit/netperfkit/latency"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
)

// spectrumSeries is one named latency distribution for a percentile-spectrum plot.
type spectrumSeries struct {
	Name string
	// Hist, when set, is sampled densely (values in nanoseconds); otherwise
	// the percentiles of Summary are drawn.
	Hist    *hdrhistogram.Histogram
	Summary *latency.Summary
}

// summaryPoints draws a Summary's percentiles on the same axes.
func summaryPoints(s *latency.Summary) plotter.XYs {
	if s == nil || s.Observations == 0 {
		return nil
	}
	pts := plotter.XYs{{X: 1, Y: float64(s.Min) / 1e3}}
	for _, p := range []struct{ q, v float64 }{
		{0.25, float64(s.P25) / 1e3}, {0.5, float64(s.P50) / 1e3}, {0.75, float64(s.P75) / 1e3}, {0.9, float64(s.P90) / 1e3}, {0.99, float64(s.P99) / 1e3},
		{0.999, float64(s.P999) / 1e3}, {0.9999, float64(s.P9999) / 1e3}, {0.99999, float64(s.P99999) / 1e3},
	} {
		x := 1 / (1 - p.q)
		if x > float64(s.Observations) {
			break
		}
		pts = append(pts, plotter.XY{X: x, Y: p.v})
	}
	return pts
}

// spectrumPoints samples a histogram the way HdrHistogram's plotter does: x is
// 1/(1-p), so 90%, 99%, 99.9% ... sit at equal distances on a log axis, and y
// is the latency at that percentile in microseconds. It stops at the last
// percentile the sample count can resolve (1 - 1/n).
func spectrumPoints(h *hdrhistogram.Histogram) plotter.XYs {
	n := h.TotalCount()
	if n == 0 {
		return nil
	}
	maxX := float64(n)
	var pts plotter.XYs
	for k := 0.0; ; k += 0.05 {
		x := math.Pow(10, k)
		if x > maxX {
			x = maxX
		}
		q := 1 - 1/x
		y := float64(h.ValueAtQuantile(q*100)) / 1e3
		pts = append(pts, plotter.XY{X: x, Y: y})
		if x >= maxX {
			break
		}
	}
	return pts
}

// percentileTicks labels the 1/(1-p) axis with percentiles.
type percentileTicks struct{}

func (percentileTicks) Ticks(min, max float64) []plot.Tick {
	var ticks []plot.Tick
	for k := 0; ; k++ {
		x := math.Pow(10, float64(k))
		if x > max*1.0001 {
			break
		}
		label := "0%"
		if k > 0 {
			label = fmt.Sprintf("%s%%", trimFloat(100*(1-1/x)))
		}
		ticks = append(ticks, plot.Tick{Value: x, Label: label})
	}
	return ticks
}

func trimFloat(v float64) string {
	s := fmt.Sprintf("%.6f", v)
	for s[len(s)-1] == '0' {
		s = s[:len(s)-1]
	}
	if s[len(s)-1] == '.' {
		s = s[:len(s)-1]
	}
	return s
}

// savePercentileSpectrum draws the series into file (the extension picks SVG
// or PNG) with gonum/plot.
func savePercentileSpectrum(file, title string, series []spectrumSeries) error {
	p, legend, err := spectrumPlot(title, series)
	if err != nil {
		return err
	}
	return savePlot(p, legend, file)
}

// spectrumPlot lays out the percentile-spectrum figure.
func spectrumPlot(title string, series []spectrumSeries) (*plot.Plot, []legendEntry, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "percentile (%)"
	p.Y.Label.Text = "latency (µs)"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = percentileTicks{}
	// Latency spectra span decades (a 10 us median under a 10 ms tail): a
	// log axis keeps both readable.
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Add(plotter.NewGrid())
	var legend []legendEntry
	for _, s := range series {
		pts := summaryPoints(s.Summary)
		if s.Hist != nil {
			pts = spectrumPoints(s.Hist)
		}
		if len(pts) < 2 {
			continue
		}
		for j := range pts {
			pts[j].Y = math.Max(pts[j].Y, 1e-3) // a log axis needs y > 0
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, nil, fmt.Errorf("report: plot %s: %w", s.Name, err)
		}
		l.LineStyle = seriesStyle(len(legend))
		p.Add(l)
		legend = append(legend, legendEntry{s.Name, l})
	}
	if len(legend) == 0 {
		return nil, nil, errors.New("report: nothing to plot")
	}
	p.BackgroundColor = color.White
	return p, legend, nil
}

// timeSeries is one matrix row's throughput over time.
type timeSeries struct {
	Name   string
	Points []IntervalPoint
}

// saveThroughputOverTime draws each series as Gbit/s against the end of
// its intervals, so that a burst credit running out shows as a step down,
// and the stated limit across the whole run.
func saveThroughputOverTime(file, title string, limit float64, series []timeSeries) error {
	p, legend, err := throughputPlot(title, limit, series)
	if err != nil {
		return err
	}
	return savePlot(p, legend, file)
}

// throughputPlot lays out the throughput-over-time figure.
func throughputPlot(title string, limit float64, series []timeSeries) (*plot.Plot, []legendEntry, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "time (s)"
	p.Y.Label.Text = "throughput (Gbit/s)"
	p.Y.Min = 0
	p.Add(plotter.NewGrid())
	var legend []legendEntry
	maxX := 0.0
	for _, s := range series {
		if len(s.Points) == 0 {
			continue
		}
		pts := make(plotter.XYs, 0, len(s.Points)+1)
		pts = append(pts, plotter.XY{X: s.Points[0].StartSeconds, Y: s.Points[0].BitsPerSecond / 1e9})
		for _, pt := range s.Points {
			pts = append(pts, plotter.XY{X: pt.EndSeconds, Y: pt.BitsPerSecond / 1e9})
			maxX = math.Max(maxX, pt.EndSeconds)
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, nil, fmt.Errorf("report: plot %s: %w", s.Name, err)
		}
		l.LineStyle = seriesStyle(len(legend))
		p.Add(l)
		legend = append(legend, legendEntry{s.Name, l})
	}
	if len(legend) == 0 {
		return nil, nil, errors.New("report: nothing to plot")
	}
	// Headroom above the highest line or the limit, so neither runs along
	// the frame.
	defer func() { p.Y.Max *= 1.08 }()
	if limit > 0 {
		l, err := plotter.NewLine(plotter.XYs{{X: 0, Y: limit / 1e9}, {X: maxX, Y: limit / 1e9}})
		if err != nil {
			return nil, nil, fmt.Errorf("report: plot limit: %w", err)
		}
		l.LineStyle = limitStyle
		p.Add(l)
		legend = append(legend, legendEntry{fmt.Sprintf("stated limit %s (%s Gbit/s)", formatRate(limit), trimFloat(limit/1e9)), l})
	}
	p.BackgroundColor = color.White
	return p, legend, nil
}
