package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// table writes aligned columns with a header line, like the field reports.
// Written into a docWriter, it records its cells for report.md and
// report.html instead.
type table struct {
	tw  *tabwriter.Writer
	doc *docTable
}

func newTable(w io.Writer, header ...string) *table {
	if d, ok := w.(*docWriter); ok {
		return &table{doc: d.table(header)}
	}
	t := &table{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)}
	t.row(header...)
	return t
}

func (t *table) row(cells ...string) {
	if t.doc != nil {
		t.doc.add(cells)
		return
	}
	fmt.Fprint(t.tw, strings.Join(cells, "\t")+"\t\n")
}

func (t *table) flush() error {
	if t.doc != nil {
		return nil
	}
	return t.tw.Flush()
}

func gbit(bps float64) string { return fmt.Sprintf("%.2f", bps/1e9) }
func us(v float64) string     { return fmt.Sprintf("%.1f", v) }
func pct(v float64) string    { return fmt.Sprintf("%.1f", v) }
