package main

import (
	"bytes"
	"regexp"
	"strings"
)

// A document is the report as report.md and report.html show it: the
// blocks the text tables print, captured structurally so that every table
// is the stdout table cell for cell.
type document struct {
	blocks []docBlock
}

// docBlock is one heading, paragraph, preformatted text, table or plot.
type docBlock struct {
	heading string
	// level of a heading: 2 for a section, 3 for a table's title.
	level int
	text  string
	pre   []string
	table *docTable
	plot  *docPlot
}

// docTable is one table: a header row and body rows.
type docTable struct {
	header []string
	rows   [][]string
}

// docPlot is one figure of -out: its file base name and title.
type docPlot struct {
	name, title string
}

// docWriter is the io.Writer the text writers print into to build a
// document: newTable records its tables; every other line becomes a
// heading (the "E1 paths: ..." titles), a paragraph or preformatted text
// (lines aligned with runs of spaces, such as the ENA counter windows).
type docWriter struct {
	doc     *document
	partial []byte
}

func newDocWriter(d *document) *docWriter { return &docWriter{doc: d} }

// titleLine matches the titles the text writers print above their tables
// ("E2 matrix: ...", "E1 ENA counter windows of ...").
var titleLine = regexp.MustCompile(`^E[1-3] [a-zA-Z]+[: ]`)

func (w *docWriter) Write(b []byte) (int, error) {
	w.partial = append(w.partial, b...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			return len(b), nil
		}
		w.line(string(w.partial[:i]))
		w.partial = w.partial[i+1:]
	}
}

// flush ends a last line written without a newline.
func (w *docWriter) flush() {
	if len(w.partial) > 0 {
		w.line(string(w.partial))
		w.partial = nil
	}
}

func (w *docWriter) line(s string) {
	s = strings.TrimRight(s, " \t")
	t := strings.TrimLeft(s, " \t")
	d := w.doc
	switch {
	case t == "":
	case titleLine.MatchString(t):
		d.blocks = append(d.blocks, docBlock{heading: t, level: 3})
	case strings.Contains(t, "  ") || strings.Contains(t, "\t"):
		if n := len(d.blocks); n > 0 && d.blocks[n-1].pre != nil {
			d.blocks[n-1].pre = append(d.blocks[n-1].pre, s)
			return
		}
		d.blocks = append(d.blocks, docBlock{pre: []string{s}})
	default:
		d.blocks = append(d.blocks, docBlock{text: t})
	}
}

// table starts a table with header; the text writer's rows go into it.
func (w *docWriter) table(header []string) *docTable {
	w.flush()
	t := &docTable{header: append([]string(nil), header...)}
	w.doc.blocks = append(w.doc.blocks, docBlock{table: t})
	return t
}

func (t *docTable) add(cells []string) {
	row := append([]string(nil), cells...)
	for len(row) < len(t.header) {
		row = append(row, "")
	}
	t.rows = append(t.rows, row)
}

// alignedCells splits a line of a column-aligned text table (text/tabwriter
// pads cells with two spaces or more; a cell holds single spaces at most).
var alignedCells = regexp.MustCompile(`\s{2,}`)

// alignTables turns each preformatted block that is a column-aligned table
// (every line splits into the same number of cells, three or more; the
// ENA counter windows) into a table, its first line the header. A block
// that does not split evenly (an empty cell, prose) stays preformatted.
func (d *document) alignTables() {
	for i, b := range d.blocks {
		if len(b.pre) < 2 {
			continue
		}
		var rows [][]string
		for _, line := range b.pre {
			cells := alignedCells.Split(strings.TrimSpace(line), -1)
			if len(cells) < 3 || (len(rows) > 0 && len(cells) != len(rows[0])) {
				rows = nil
				break
			}
			rows = append(rows, cells)
		}
		if rows != nil {
			d.blocks[i] = docBlock{table: &docTable{header: rows[0], rows: rows[1:]}}
		}
	}
}

func (d *document) section(title string) {
	d.blocks = append(d.blocks, docBlock{heading: title, level: 2})
}

func (d *document) paragraph(text string) {
	d.blocks = append(d.blocks, docBlock{text: text})
}

func (d *document) figure(name, title string) {
	d.blocks = append(d.blocks, docBlock{plot: &docPlot{name: name, title: title}})
}

// tables lists the document's tables, in order.
func (d *document) tables() []*docTable {
	var out []*docTable
	for _, b := range d.blocks {
		if b.table != nil {
			out = append(out, b.table)
		}
	}
	return out
}

// buildDocument lays the report out as the field posts do: each
// experiment's tables (the stdout tables) followed by its plot. plotted
// names the plots drawn as SVG.
func buildDocument(rep *Report, plotted map[string]bool) (*document, error) {
	d := &document{}
	figures := map[string]string{}
	for _, pl := range plotsOf(rep) {
		figures[pl.name] = strings.ReplaceAll(pl.title, "\n", " ")
	}
	w := newDocWriter(d)
	sections := []struct {
		title, plot string
		present     bool
		write       func() error
	}{
		{"E1 paths", "rtt-spectrum", rep.Paths != nil, func() error { return writePathsText(w, rep.Paths) }},
		{"E2 matrix", "matrix-throughput", rep.Matrix != nil, func() error { return writeMatrixText(w, rep.Matrix) }},
		{"E3 cache", "cache-spectrum", rep.Cache != nil, func() error { return writeCacheText(w, rep.Cache) }},
	}
	for _, s := range sections {
		d.section(s.title)
		if !s.present {
			d.paragraph("Not run (skipped, or the run stopped before it).")
			continue
		}
		if err := s.write(); err != nil {
			return nil, err
		}
		w.flush()
		d.alignTables()
		if plotted[s.plot] {
			d.figure(s.plot, figures[s.plot])
		}
	}
	return d, nil
}
