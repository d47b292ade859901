package main

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"testing"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/recorder"
)

func TestSpectrumPoints(t *testing.T) {
	h := hdrhistogram.New(1, 60e9, 3)
	for i := 1; i <= 1000; i++ {
		require.NoError(t, h.RecordValue(int64(i)*1000)) // 1..1000 us
	}
	pts := spectrumPoints(h)
	require.NotEmpty(t, pts)
	assert.Equal(t, 1.0, pts[0].X)
	assert.InDelta(t, 1000, pts[len(pts)-1].X, 1e-9, "stops at 1/(1-p) = n")
	assert.InDelta(t, 999, pts[len(pts)-1].Y, 2, "p99.9 of 1..1000 us")
	for i := 1; i < len(pts); i++ {
		assert.GreaterOrEqual(t, pts[i].Y, pts[i-1].Y, "spectrum is monotonic")
	}
	assert.Nil(t, spectrumPoints(hdrhistogram.New(1, 10, 1)))
}

func TestPercentileTicks(t *testing.T) {
	ticks := percentileTicks{}.Ticks(1, 1000)
	labels := make([]string, len(ticks))
	for i, tk := range ticks {
		labels[i] = tk.Label
	}
	assert.Equal(t, []string{"0%", "90%", "99%", "99.9%"}, labels)
}

func TestSavePercentileSpectrum(t *testing.T) {
	h := hdrhistogram.New(1, 60e9, 3)
	for i := 1; i <= 500; i++ {
		require.NoError(t, h.RecordValue(int64(i)*100))
	}
	dir := t.TempDir()
	for _, name := range []string{"a.svg", "a.png"} {
		f := filepath.Join(dir, name)
		require.NoError(t, savePercentileSpectrum(f, "RTT", []spectrumSeries{{Name: "x", Hist: h}}))
		st, err := os.Stat(f)
		require.NoError(t, err)
		assert.Greater(t, st.Size(), int64(1000))
	}
	assert.Error(t, savePercentileSpectrum(filepath.Join(dir, "b.svg"), "RTT", nil))
}

// recordFigure draws p and its legend on a recording canvas.
func recordFigure(p *plot.Plot, legend []legendEntry) (*recorder.Canvas, vg.Length) {
	rec := &recorder.Canvas{}
	h := figureHeight(p, legend)
	drawFigure(draw.NewCanvas(rec, plotWidth, h), p, legend)
	return rec, h - plotHeight
}

// strokeStyle is what a recorded stroke was drawn with.
type strokeStyle struct {
	color  color.Color
	dashes string
	path   vg.Path
}

func recordedStrokes(rec *recorder.Canvas) ([]strokeStyle, []*recorder.FillString) {
	var strokes []strokeStyle
	var texts []*recorder.FillString
	var col color.Color
	dashes := ""
	for _, a := range rec.Actions {
		switch a := a.(type) {
		case *recorder.SetColor:
			col = a.Color
		case *recorder.SetLineDash:
			dashes = fmt.Sprint(a.Dashes)
		case *recorder.Stroke:
			strokes = append(strokes, strokeStyle{col, dashes, a.Path})
		case *recorder.FillString:
			texts = append(texts, a)
		}
	}
	return strokes, texts
}

// TestPlotLegendNeverCoversData draws the matrix figure with eight rows
// whose lines run along the top of the plot, where a legend inside the axes
// sat, and checks from the drawing commands that every legend entry lies in
// the band below the axes, that every data line lies above it, and that the
// eight rows and the limit each have their own colour and dash.
func TestPlotLegendNeverCoversData(t *testing.T) {
	var series []timeSeries
	for i := range 8 {
		v := 9e9 - float64(i)*1e8
		series = append(series, timeSeries{Name: fmt.Sprintf("TCP %d streams upload", i+1), Points: []IntervalPoint{
			{StartSeconds: 0, EndSeconds: 1, BitsPerSecond: v}, {StartSeconds: 1, EndSeconds: 2, BitsPerSecond: v}}})
	}
	p, legend, err := throughputPlot("E2", 5e9, series)
	require.NoError(t, err)
	require.Len(t, legend, 9, "eight rows and the stated limit")
	assert.Equal(t, "stated limit 5G (5 Gbit/s)", legend[8].name)
	assert.Equal(t, "throughput (Gbit/s)", p.Y.Label.Text, "the axis names its unit")
	assert.Equal(t, "time (s)", p.X.Label.Text)

	rec, band := recordFigure(p, legend)
	require.Positive(t, band)
	strokes, texts := recordedStrokes(rec)
	names := map[string]bool{}
	for _, e := range legend {
		names[e.name] = true
	}
	found := 0
	for _, tx := range texts {
		if names[tx.String] {
			found++
			assert.Less(t, tx.Point.Y, band, "legend entry %q is in the band under the axes", tx.String)
		}
	}
	assert.Equal(t, len(legend), found, "every legend entry is drawn")

	type style struct{ color, dashes string }
	dataStyles := map[style]int{}
	limitAt := vg.Length(-1)
	for _, s := range strokes {
		if len(s.path) < 2 {
			continue
		}
		above, below := 0, 0
		for _, pc := range s.path {
			if pc.Pos.Y >= band {
				above++
			} else {
				below++
			}
		}
		require.True(t, above == 0 || below == 0, "no stroke crosses from the legend band into the axes")
		if above > 0 && s.color == limitStyle.Color && len(s.path) == 2 && s.dashes == fmt.Sprint(limitStyle.Dashes) {
			limitAt = s.path[0].Pos.Y
		}
		if above > 0 && len(s.path) == 3 { // a row: its start and two interval ends
			dataStyles[style{fmt.Sprint(s.color), s.dashes}]++
		}
	}
	assert.Len(t, dataStyles, 8, "eight rows, eight styles")
	colors, dashes := map[string]bool{}, map[string]bool{}
	for st := range dataStyles {
		colors[st.color], dashes[st.dashes] = true, true
	}
	assert.Len(t, colors, 8, "every row has its own colour")
	assert.Len(t, dashes, 7, "dash patterns cycle after seven; colour and dash together stay distinct")
	assert.Positive(t, limitAt, "the stated limit is drawn inside the axes")
}

func TestSeriesStylesDistinct(t *testing.T) {
	seen := map[string]bool{}
	for i := range len(seriesColors) * len(seriesDashes) {
		st := seriesStyle(i)
		key := fmt.Sprint(st.Color, st.Dashes)
		assert.False(t, seen[key], "series %d repeats an earlier colour and dash", i)
		seen[key] = true
		if i < len(seriesColors) {
			for j := range i {
				assert.NotEqual(t, seriesStyle(j).Color, st.Color, "series %d and %d share a colour", i, j)
			}
		}
		assert.NotEqual(t, limitStyle.Color, st.Color, "no series looks like the limit")
	}
}

// TestCacheSpectrumColours draws eight cache series (four endpoints, two
// modes), one more than the old palette held, and checks that no two
// share a colour.
func TestCacheSpectrumColours(t *testing.T) {
	var series []spectrumSeries
	for i := range 8 {
		h := hdrhistogram.New(1, 60e9, 3)
		for v := 1; v <= 200; v++ {
			require.NoError(t, h.RecordValue(int64(v*(i+1))*1000))
		}
		series = append(series, spectrumSeries{Name: fmt.Sprintf("ep%d resp pool", i), Hist: h})
	}
	p, legend, err := spectrumPlot("cache", series)
	require.NoError(t, err)
	assert.Equal(t, "latency (µs)", p.Y.Label.Text)
	assert.Equal(t, "percentile (%)", p.X.Label.Text)
	rec, band := recordFigure(p, legend)
	strokes, _ := recordedStrokes(rec)
	colors := map[string]bool{}
	for _, s := range strokes {
		if len(s.path) > 10 && s.path[0].Pos.Y >= band {
			colors[fmt.Sprint(s.color)] = true
		}
	}
	assert.Len(t, colors, 8)
}
