package main

import (
	"bytes"
	"html/template"
	"regexp"
	"strings"
)

// htmlSection is one experiment of report.html.
type htmlSection struct {
	ID, Title string
	Items     []htmlItem
}

// htmlItem is one block of a section; exactly one field is set.
type htmlItem struct {
	Heading, Text, Note, Pre string
	Table                    *htmlTable
	Figure                   *htmlFigure
}

type htmlTable struct {
	Header []htmlCell
	Rows   [][]htmlCell
}

// htmlCell carries its column's header (Label) for the narrow layout,
// where each row becomes a card of label: value lines.
type htmlCell struct {
	Label, Text string
	Num         bool
}

type htmlFigure struct {
	Title string
	SVG   template.HTML
}

// htmlPage is what the template renders.
type htmlPage struct {
	Title, Summary string
	Meta           [][2]string
	Sections       []htmlSection
	PlotErrors     []string
	Commands       string
}

// renderHTML is report.html: one page with no external resource (styles
// inline, the plots inline as SVG) that reads on a laptop and on a phone.
// svgs holds each plot's SVG file by base name.
func renderHTML(rep *Report, d *document, svgs map[string][]byte) ([]byte, error) {
	page := htmlPage{
		Title: "netperfkit report", Summary: runSummary(rep), Meta: metadataRows(rep.Metadata),
		PlotErrors: rep.PlotErrors, Commands: strings.Join(reproduceCommands(rep), "\n"),
	}
	if rep.Metadata != nil && rep.Metadata.Host != "" {
		page.Title += " · " + rep.Metadata.Host
	}
	var cur *htmlSection
	for _, bl := range d.blocks {
		if bl.level == 2 {
			page.Sections = append(page.Sections, htmlSection{ID: sectionID(bl.heading), Title: bl.heading})
			cur = &page.Sections[len(page.Sections)-1]
			continue
		}
		if cur == nil {
			page.Sections = append(page.Sections, htmlSection{ID: "report"})
			cur = &page.Sections[len(page.Sections)-1]
		}
		cur.Items = append(cur.Items, htmlItemOf(bl, svgs))
	}
	var b bytes.Buffer
	if err := pageTemplate.Execute(&b, page); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func htmlItemOf(bl docBlock, svgs map[string][]byte) htmlItem {
	switch {
	case bl.heading != "":
		return htmlItem{Heading: bl.heading}
	case bl.table != nil:
		return htmlItem{Table: htmlTableOf(bl.table)}
	case bl.pre != nil:
		return htmlItem{Pre: strings.Join(bl.pre, "\n")}
	case bl.plot != nil:
		return htmlItem{Figure: &htmlFigure{Title: bl.plot.title, SVG: inlineSVG(svgs[bl.plot.name], bl.plot.title)}}
	case strings.HasPrefix(bl.text, "NOTE: "):
		return htmlItem{Note: strings.TrimPrefix(bl.text, "NOTE: ")}
	}
	return htmlItem{Text: bl.text}
}

func htmlTableOf(t *docTable) *htmlTable {
	num := numericColumns(t)
	ht := &htmlTable{}
	for i, h := range t.header {
		ht.Header = append(ht.Header, htmlCell{Label: h, Text: h, Num: num[i]})
	}
	for _, r := range t.rows {
		row := make([]htmlCell, len(t.header))
		for i := range t.header {
			row[i] = htmlCell{Label: t.header[i], Text: r[i], Num: num[i]}
		}
		ht.Rows = append(ht.Rows, row)
	}
	return ht
}

// sectionID turns "E1 paths" into "e1-paths".
func sectionID(title string) string {
	return strings.ToLower(strings.Join(strings.Fields(title), "-"))
}

var (
	svgProlog = regexp.MustCompile(`(?s)^.*?(<svg\b)`)
	svgSize   = regexp.MustCompile(`^<svg\s+width="[^"]*"\s+height="[^"]*"`)
)

// inlineSVG prepares a plot's SVG file for the page: no XML prolog, and
// no fixed size, so that its viewBox scales it to the column's width.
// The SVG is gonum/plot's own output, drawn by this run.
func inlineSVG(b []byte, title string) template.HTML {
	s := svgProlog.ReplaceAllString(string(b), "$1")
	label := template.HTMLEscapeString(title)
	s = svgSize.ReplaceAllString(s, `<svg class="plot" role="img" aria-label="`+label+`"`)
	return template.HTML(s)
}

var pageTemplate = template.Must(template.New("report.html").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
:root { color-scheme: light; --rule: #d0d7de; --muted: #57606a; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Liberation Sans", sans-serif; color: #1f2328; background: #fff; }
main { max-width: 1240px; margin: 0 auto; padding: 16px 20px 48px; }
h1 { font-size: 1.6rem; margin: .2em 0; }
h2 { font-size: 1.3rem; margin: 1.6em 0 .4em; padding-bottom: .2em; border-bottom: 1px solid var(--rule); }
h3 { font-size: 1rem; margin: 1.2em 0 .4em; }
p { margin: .4em 0; overflow-wrap: break-word; }
.summary { color: var(--muted); }
.note { border-left: 4px solid #bf8700; background: #fff8c5; padding: .4em .8em; }
table { border-collapse: collapse; font-size: .82rem; font-variant-numeric: tabular-nums; margin: .4em 0 .8em; max-width: 100%; }
th, td { padding: .3em .5em; border-bottom: 1px solid var(--rule); vertical-align: top; overflow-wrap: break-word; text-align: left; }
thead th { background: #f6f8fa; font-weight: 600; }
.num { text-align: right; }
table.meta th { white-space: nowrap; background: none; }
table.meta td { overflow-wrap: anywhere; }
pre { background: #f6f8fa; padding: .6em .8em; overflow-x: auto; max-width: 100%; font-size: .8rem; }
pre.commands { white-space: pre-wrap; overflow-wrap: anywhere; }
figure { margin: .8em 0 1.2em; }
figure svg.plot { display: block; width: 100%; height: auto; max-width: 900px; }
@media (max-width: 760px) {
  main { padding: 12px 10px 32px; }
  table.data, table.data tbody, table.data tr, table.data td { display: block; width: 100%; }
  table.data thead { display: none; }
  table.data tr { border: 1px solid var(--rule); border-radius: 6px; margin: 0 0 .6em; padding: .2em .4em; }
  table.data td { display: flex; justify-content: space-between; gap: 1em; border: 0; padding: .15em 0; text-align: right; }
  table.data td::before { content: attr(data-label); font-weight: 600; text-align: left; flex: 0 1 45%; }
  table.data td:first-child { font-weight: 600; }
}
</style>
</head>
<body>
<main>
<h1>netperfkit report</h1>
<p class="summary">{{.Summary}}</p>
{{- if .Meta}}
<section id="metadata">
<h2>Run metadata</h2>
<table class="meta"><tbody>
{{- range .Meta}}
<tr><th scope="row">{{index . 0}}</th><td>{{index . 1}}</td></tr>
{{- end}}
</tbody></table>
</section>
{{- end}}
{{- range .Sections}}
<section id="{{.ID}}">
<h2>{{.Title}}</h2>
{{- range .Items}}
{{- if .Heading}}
<h3>{{.Heading}}</h3>
{{- else if .Table}}
<table class="data">
<thead><tr>{{range .Table.Header}}<th scope="col"{{if .Num}} class="num"{{end}}>{{.Text}}</th>{{end}}</tr></thead>
<tbody>
{{- range .Table.Rows}}
<tr>{{range .}}<td data-label="{{.Label}}"{{if .Num}} class="num"{{end}}>{{.Text}}</td>{{end}}</tr>
{{- end}}
</tbody>
</table>
{{- else if .Pre}}
<pre>{{.Pre}}</pre>
{{- else if .Figure}}
<figure>{{.Figure.SVG}}</figure>
{{- else if .Note}}
<p class="note"><strong>NOTE:</strong> {{.Note}}</p>
{{- else}}
<p>{{.Text}}</p>
{{- end}}
{{- end}}
</section>
{{- end}}
{{- range .PlotErrors}}
<p>Plot not drawn: {{.}}</p>
{{- end}}
<section id="reproduce">
<h2>Reproduce</h2>
<pre class="commands">{{.Commands}}</pre>
</section>
</main>
</body>
</html>
`))
