package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// The rendered table sits between these two lines in README.md and in
// docs/benchmarks.md; -render rewrites what is between them.
const (
	beginMark = "<!-- anchors table: rendered from docs/anchors.json by `go run ./scripts/anchors -render`; do not edit -->"
	endMark   = "<!-- end of anchors table -->"
)

// renderTargets are the documents that carry the table, with the prefix
// their links to docs/benchmarks.md's sections take. README.md's is
// compact: one row per anchor, its figures in one cell.
var renderTargets = []struct {
	path, linkPrefix string
	compact          bool
}{
	{"README.md", "docs/benchmarks.md#", true},
	{"docs/benchmarks.md", "#", false},
}

// cell makes s safe inside a Markdown table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", "\\|")
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 160 {
		s = s[:157] + "..."
	}
	return s
}

// rows returns an entry's table rows after the anchor's name: figure, value,
// rounds.
func rows(e *Entry) [][3]string {
	var out [][3]string
	if ag := e.Agreement; ag != nil {
		v := fmt.Sprintf("agree: %d of %d", ag.Agree, ag.Compared)
		if !ag.OK() {
			v = fmt.Sprintf("differ: %d of %d agree", ag.Agree, ag.Compared)
			if len(ag.Detail) > 0 {
				v += " (" + ag.Detail[0] + ")"
			}
		}
		out = append(out, [3]string{ag.What, v, "1"})
	}
	switch e.Status {
	case statusMeasured:
		for _, r := range e.Ratios {
			out = append(out, [3]string{
				fmt.Sprintf("%s (%s is better)", r.Label, r.Better),
				fmt.Sprintf("%.2fx [%.2f-%.2f]", r.Median, r.Min, r.Max),
				fmt.Sprint(r.N),
			})
		}
	case statusBusy:
		v := "busy: " + e.Load.String()
		if e.Load == nil || !e.Load.Busy {
			v = "not judged: " + e.Reason
		}
		out = append(out, [3]string{"ratio", v, fmt.Sprint(len(e.Rounds))})
	default:
		out = append(out, [3]string{"-", e.Status + ": " + e.Reason, "0"})
	}
	return out
}

// renderTable renders f as the Markdown table the documents carry: a row
// per figure, or with compact a row per anchor whose figures share a cell.
func renderTable(f *File, linkPrefix string, compact bool) string {
	var b strings.Builder
	if compact {
		b.WriteString("| anchor | figures: ours ÷ theirs, median [rounds' range] | rounds | method |\n")
		b.WriteString("|---|---|---|---|\n")
	} else {
		b.WriteString("| anchor | figure | ours ÷ theirs: median [rounds' range] | rounds | method |\n")
		b.WriteString("|---|---|---|---|---|\n")
	}
	var passes []string
	for _, e := range f.Anchors {
		how := fmt.Sprintf("[how](%s%s)", linkPrefix, sectionOf(e))
		if compact {
			var figs, ns []string
			for _, r := range rows(e) {
				fig := r[0] + ": " + r[1]
				if r[0] == "-" {
					fig = r[1]
				}
				figs = append(figs, cell(fig))
				if !slices.Contains(ns, r[2]) {
					ns = append(ns, r[2])
				}
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", cell(e.Title), strings.Join(figs, "; "), strings.Join(ns, ", "), how)
		} else {
			for _, r := range rows(e) {
				fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", cell(e.Title), cell(r[0]), cell(r[1]), r[2], how)
			}
		}
		if e.Host != nil && e.Commit != "" {
			p := fmt.Sprintf("%.12s on %s, %d cores, linux %s, %s", e.Commit, e.Host.CPU, e.Host.Cores, e.Host.Kernel, e.Date[:min(10, len(e.Date))])
			if !slices.Contains(passes, p) {
				passes = append(passes, p)
			}
		}
	}
	if len(passes) > 0 {
		b.WriteString("\nMeasured at " + strings.Join(passes, "; at ") + ".\n")
	}
	return b.String()
}

// sectionOf returns the entry's section link target (the anchor table's,
// else the one recorded).
func sectionOf(e *Entry) string {
	if a := anchorNamed(e.Name); a != nil {
		return a.section
	}
	_, s, _ := strings.Cut(e.Method, "#")
	return s
}

// between returns the text between the markers of doc.
func between(doc string) (before, inside, after string, err error) {
	before, rest, ok := strings.Cut(doc, beginMark+"\n")
	if !ok {
		return "", "", "", fmt.Errorf("anchors: no %q line", beginMark)
	}
	inside, after, ok = strings.Cut(rest, endMark)
	if !ok {
		return "", "", "", fmt.Errorf("anchors: no %q after the begin marker", endMark)
	}
	return before, inside, after, nil
}

// render rewrites the table in every target under root.
func render(root string, f *File) error {
	for _, t := range renderTargets {
		p := filepath.Join(root, t.path)
		b, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("anchors: %w", err)
		}
		before, _, after, err := between(string(b))
		if err != nil {
			return fmt.Errorf("%w in %s", err, t.path)
		}
		doc := before + beginMark + "\n" + renderTable(f, t.linkPrefix, t.compact) + endMark + after
		if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
			return fmt.Errorf("anchors: %w", err)
		}
	}
	return nil
}
