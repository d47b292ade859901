package main

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// renderMarkdown is report.md: GitHub-flavoured Markdown with the metadata
// block, every table of the text report, the plots (the SVG files beside
// it) and the commands that reproduce the run.
func renderMarkdown(rep *Report, d *document) []byte {
	var b bytes.Buffer
	b.WriteString("# netperfkit report\n\n")
	b.WriteString(mdEscape(runSummary(rep)) + "\n\n")
	if rows := metadataRows(rep.Metadata); len(rows) > 0 {
		b.WriteString("## Run metadata\n\n| field | value |\n| :--- | :--- |\n")
		for _, r := range rows {
			fmt.Fprintf(&b, "| %s | %s |\n", mdCell(r[0]), mdCell(r[1]))
		}
		b.WriteString("\n")
	}
	for _, bl := range d.blocks {
		switch {
		case bl.heading != "":
			fmt.Fprintf(&b, "%s %s\n\n", strings.Repeat("#", bl.level), mdEscape(bl.heading))
		case bl.table != nil:
			mdTable(&b, bl.table)
		case bl.pre != nil:
			fmt.Fprintf(&b, "```text\n%s\n```\n\n", strings.Join(bl.pre, "\n"))
		case bl.plot != nil:
			fmt.Fprintf(&b, "![%s](%s.svg)\n\n", mdEscape(bl.plot.title), bl.plot.name)
		case strings.HasPrefix(bl.text, "NOTE: "):
			fmt.Fprintf(&b, "> **NOTE:** %s\n\n", mdEscape(strings.TrimPrefix(bl.text, "NOTE: ")))
		default:
			fmt.Fprintf(&b, "%s\n\n", mdEscape(bl.text))
		}
	}
	for _, e := range rep.PlotErrors {
		fmt.Fprintf(&b, "Plot not drawn: %s\n\n", mdEscape(e))
	}
	b.WriteString("## Reproduce\n\n```sh\n" + strings.Join(reproduceCommands(rep), "\n") + "\n```\n")
	return b.Bytes()
}

// runSummary is the line under the title: when, for how long, and whether
// the run was cut short.
func runSummary(rep *Report) string {
	s := fmt.Sprintf("Started %s, took %.1f s.", rep.StartedAt.UTC().Format(time.RFC3339), rep.DurationSeconds)
	if rep.Interrupted {
		s += " INTERRUPTED: " + rep.Error + "; the tables hold what finished."
	}
	return s
}

func mdTable(b *bytes.Buffer, t *docTable) {
	cells := func(row []string) {
		b.WriteString("|")
		for _, c := range row {
			b.WriteString(" " + mdCell(c) + " |")
		}
		b.WriteString("\n")
	}
	cells(t.header)
	b.WriteString("|")
	for _, num := range numericColumns(t) {
		if num {
			b.WriteString(" ---: |")
		} else {
			b.WriteString(" :--- |")
		}
	}
	b.WriteString("\n")
	for _, r := range t.rows {
		cells(r)
	}
	b.WriteString("\n")
}

// mdSpecial are the characters that GitHub-flavoured Markdown could read
// as markup inside text (emphasis, links, images, HTML, entities,
// strikethrough, code).
var mdSpecial = strings.NewReplacer(
	`\`, `\\`, "`", "\\`", `*`, `\*`, `_`, `\_`, `[`, `\[`, `]`, `\]`,
	`<`, `\<`, `>`, `\>`, `~`, `\~`, `|`, `\|`, `&`, `\&`, `!`, `\!`,
)

// mdEscape makes s literal text in a paragraph or heading.
func mdEscape(s string) string {
	s = mdSpecial.Replace(s)
	// A leading #, - or + would start a heading or a list, and so would
	// "1." or "1)".
	if s != "" && strings.ContainsRune("#-+", rune(s[0])) {
		s = `\` + s
	}
	if m := orderedList.FindStringIndex(s); m != nil {
		s = s[:m[1]-1] + `\` + s[m[1]-1:]
	}
	return s
}

var orderedList = regexp.MustCompile(`^[0-9]+[.)]`)

// mdCell makes s literal text in a table cell; an empty cell stays empty.
func mdCell(s string) string {
	return strings.ReplaceAll(mdSpecial.Replace(s), "\n", " ")
}
