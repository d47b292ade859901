package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// table writes aligned columns with a header line, like the field reports.
type table struct {
	tw *tabwriter.Writer
}

func newTable(w io.Writer, header ...string) *table {
	t := &table{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)}
	t.row(header...)
	return t
}

func (t *table) row(cells ...string) {
	fmt.Fprint(t.tw, strings.Join(cells, "\t")+"\t\n")
}

func (t *table) flush() error { return t.tw.Flush() }

func gbit(bps float64) string { return fmt.Sprintf("%.2f", bps/1e9) }
func us(v float64) string     { return fmt.Sprintf("%.1f", v) }
func pct(v float64) string    { return fmt.Sprintf("%.1f", v) }
