package main

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// seriesColors tell series apart for readers with any colour vision:
// Okabe and Ito's eight, then two darker tones; black is kept for the limit
// line.
var seriesColors = []color.RGBA{
	{R: 0x00, G: 0x72, B: 0xB2, A: 0xFF}, // blue
	{R: 0xE6, G: 0x9F, B: 0x00, A: 0xFF}, // orange
	{R: 0x00, G: 0x9E, B: 0x73, A: 0xFF}, // bluish green
	{R: 0xCC, G: 0x79, B: 0xA7, A: 0xFF}, // reddish purple
	{R: 0xD5, G: 0x5E, B: 0x00, A: 0xFF}, // vermillion
	{R: 0x56, G: 0xB4, B: 0xE9, A: 0xFF}, // sky blue
	{R: 0x8C, G: 0x7A, B: 0x00, A: 0xFF}, // olive (Okabe-Ito's yellow, darkened to read on white)
	{R: 0x66, G: 0x66, B: 0x66, A: 0xFF}, // grey
	{R: 0x88, G: 0x22, B: 0x55, A: 0xFF}, // wine
	{R: 0x33, G: 0x22, B: 0x88, A: 0xFF}, // indigo
}

// seriesDashes are the dash patterns, solid first; their count is prime
// to seriesColors' so that colour and dash pairs repeat only after 70
// series.
var seriesDashes = [][]vg.Length{
	nil,
	{vg.Points(6), vg.Points(3)},
	{vg.Points(1.5), vg.Points(2)},
	{vg.Points(8), vg.Points(3), vg.Points(1.5), vg.Points(3)},
	{vg.Points(12), vg.Points(4)},
	{vg.Points(4), vg.Points(2), vg.Points(1.5), vg.Points(2), vg.Points(1.5), vg.Points(2)},
	{vg.Points(3), vg.Points(5)},
}

// seriesStyle is the line of the i-th drawn series: a colour and a dash no
// other of the first len(seriesColors) series has.
func seriesStyle(i int) draw.LineStyle {
	return draw.LineStyle{
		Color:  seriesColors[i%len(seriesColors)],
		Dashes: seriesDashes[i%len(seriesDashes)],
		Width:  vg.Points(1.5),
	}
}

// limitStyle draws a stated limit: black, heavier and with longer dashes
// than any series.
var limitStyle = draw.LineStyle{
	Color:  color.Black,
	Width:  vg.Points(2.5),
	Dashes: []vg.Length{vg.Points(14), vg.Points(5)},
}

// legendEntry is one series' name and line sample.
type legendEntry struct {
	name  string
	thumb plot.Thumbnailer
}

// Figure size: the plot area, then the legend band under it.
const (
	plotWidth  = 8 * vg.Inch
	plotHeight = 4.5 * vg.Inch
)

// savePlot writes p to file (.svg or .png) with the legend in a band of its
// own under the axes, in as many columns as the width holds, so that no
// entry covers a line however the data fall.
func savePlot(p *plot.Plot, entries []legendEntry, file string) error {
	ext := strings.TrimPrefix(filepath.Ext(file), ".")
	c, err := draw.NewFormattedCanvas(plotWidth, figureHeight(p, entries), ext)
	if err != nil {
		return fmt.Errorf("report: plot %s: %w", file, err)
	}
	drawFigure(draw.New(c), p, entries)
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("report: plot %s: %w", file, err)
	}
	return f.Close()
}

// figureHeight is the height of the figure: the plot and its legend band.
func figureHeight(p *plot.Plot, entries []legendEntry) vg.Length {
	band, _, _ := legendBand(p, entries)
	return plotHeight + band
}

// drawFigure draws p in the top plotHeight of dc and the legend band in
// the rest, on white.
func drawFigure(dc draw.Canvas, p *plot.Plot, entries []legendEntry) {
	band, cols, rowH := legendBand(p, entries)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	p.Draw(draw.Crop(dc, 0, 0, band, 0))
	drawLegendBand(p, entries, draw.Crop(dc, 0, 0, 0, -plotHeight), cols, rowH)
}

// legendBand sizes the band: its height, its columns and one row's height.
func legendBand(p *plot.Plot, entries []legendEntry) (vg.Length, int, vg.Length) {
	if len(entries) == 0 {
		return 0, 1, 0
	}
	ts := p.Legend.TextStyle
	var widest vg.Length
	for _, e := range entries {
		widest = max(widest, ts.Width(e.name))
	}
	colW := widest + p.Legend.ThumbnailWidth + 3*ts.Font.Size
	cols := max(1, min(len(entries), int((plotWidth-2*ts.Font.Size)/colW)))
	rows := (len(entries) + cols - 1) / cols
	rowH := ts.Height("Mg") * 1.3
	return vg.Length(rows)*rowH + ts.Font.Size, cols, rowH
}

// drawLegendBand draws the entries row by row, left to right, in c.
func drawLegendBand(p *plot.Plot, entries []legendEntry, c draw.Canvas, cols int, rowH vg.Length) {
	if len(entries) == 0 {
		return
	}
	ts := p.Legend.TextStyle
	colW := (c.Max.X - c.Min.X - 2*ts.Font.Size) / vg.Length(cols)
	rows := (len(entries) + cols - 1) / cols
	for col := 0; col < cols; col++ {
		l := plot.NewLegend()
		l.Top, l.Left = true, true
		l.TextStyle = ts
		l.ThumbnailWidth = p.Legend.ThumbnailWidth
		l.Padding = rowH - ts.Height("Mg")
		for r := 0; r < rows; r++ {
			if i := r*cols + col; i < len(entries) {
				l.Add(entries[i].name, entries[i].thumb)
			}
		}
		left := ts.Font.Size + vg.Length(col)*colW
		l.Draw(draw.Crop(c, left, -(c.Max.X - c.Min.X - left - colW), 0, 0))
	}
}
