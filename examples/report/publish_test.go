package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/netperfkit/netperfkit/runinfo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
)

// publishedRun runs the whole report with tiny durations and -out, and
// returns the directory and the report it wrote.
func publishedRun(t *testing.T) (string, *Report) {
	t.Helper()
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	// Four local clusters start first: minutes on a loaded machine.
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	// The failover drill (a table more, and seconds) is TestReportEndToEnd's.
	code := run(ctx, []string{"-imds", "off", "-engines", "resp", "-d", "200ms", "-rtt-d", "1s", "-cache-d", "200ms", "-cache-failover=false",
		"-runs", "2", "-probes", "5", "-rates", "50M", "-streams", "2", "-mstreams", "2", "-out", out}, &stdout, &stderr)
	require.Equal(t, 0, code, "stderr: %s", stderr.String())
	assert.Contains(t, stdout.String(), "report.md, report.html")
	rep, err := readReport(filepath.Join(out, "report.json"))
	require.NoError(t, err)
	return out, rep
}

// Tables the tiny run prints: metadata; E1 paths and RTT idle and under
// load; E2 matrix; E3 phases, workloads, under load and ratios.
// E1's three: the kernel-to-kernel RTT (linux, issue 31), the paths, the
// RTT under load.
var wantTables = map[string]int{"metadata": 1, "e1-paths": 3, "e2-matrix": 1, "e3-cache": 4}

// TestPublishedReport checks report.md through a GitHub-flavoured Markdown
// renderer and report.html in headless Chromium, from one real run.
func TestPublishedReport(t *testing.T) {
	out, rep := publishedRun(t)
	assert.Equal(t, []string{"-cache-d=200ms", "-cache-failover=false", "-d=200ms", "-engines=resp", "-imds=off", "-mstreams=2", "-out=" + out,
		"-probes=5", "-rates=50M", "-rtt-d=1s", "-runs=2", "-streams=2"}, rep.Command, "report.json keeps the command line")
	t.Run("markdown", func(t *testing.T) { checkMarkdown(t, out, rep) })
	t.Run("html", func(t *testing.T) { checkHTMLStatic(t, out) })
	t.Run("chromium", func(t *testing.T) { checkHTMLInBrowser(t, out) })
}

// checkMarkdown renders report.md as GitHub does (goldmark with the GFM
// extensions) and checks that every table came out as a table with the
// rows and columns of the text report, the plots as images and the
// command as a code block.
func checkMarkdown(t *testing.T, out string, rep *Report) {
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	require.NoError(t, err)
	var html bytes.Buffer
	require.NoError(t, goldmark.New(goldmark.WithExtensions(extension.GFM)).Convert(md, &html))
	page := html.String()

	tables := regexp.MustCompile(`(?s)<table>.*?</table>`).FindAllString(page, -1)
	total := 0
	for _, n := range wantTables {
		total += n
	}
	require.Len(t, tables, total, "every table renders as one: %s", page)
	var matrix string
	for _, tb := range tables {
		if regexp.MustCompile(`<th[^>]*>scenario</th>`).MatchString(tb) {
			matrix = tb
		}
		// A malformed row would be dropped or split: every row has the header's cells.
		head := len(cellTag("th").FindAllString(tb[:strings.Index(tb, "</thead>")], -1))
		for _, row := range regexp.MustCompile(`(?s)<tbody>.*</tbody>`).FindAllString(tb, -1) {
			for _, tr := range strings.Split(row, "</tr>") {
				if strings.Contains(tr, "<td") {
					assert.Equal(t, head, len(cellTag("td").FindAllString(tr, -1)), "row %q", tr)
				}
			}
		}
	}
	require.NotEmpty(t, matrix)
	assert.Equal(t, len(rep.Matrix.Rows), strings.Count(matrix, "<tr>")-1, "one row per matrix scenario")
	assert.Contains(t, matrix, ">TCP 2 streams</td>")
	assert.Contains(t, page, ">~ (p=", "benchstat's notation survives escaping")
	assert.NotContains(t, page, "<del>", "no text turned into strikethrough")
	assert.NotContains(t, page, "<em>", "no text turned into emphasis")
	for _, p := range []string{"rtt-spectrum.svg", "matrix-throughput.svg", "cache-spectrum.svg"} {
		assert.Contains(t, page, `<img src="`+p+`"`)
	}
	assert.Regexp(t, `<pre><code class="language-sh">[^<]*go run ./examples/report -cache-d=200ms -cache-failover=false -d=200ms`, page)
	assert.Contains(t, page, "<h2>Run metadata</h2>")
	for _, h := range []string{"E1 paths", "E2 matrix", "E3 cache"} {
		assert.Contains(t, page, "<h2>"+h+"</h2>")
	}
}

// cellTag matches the opening tag of a table cell (not thead or tbody).
func cellTag(name string) *regexp.Regexp { return regexp.MustCompile(`<` + name + `[\s>]`) }

// checkHTMLStatic checks that report.html needs nothing from outside.
func checkHTMLStatic(t *testing.T, out string) {
	b, err := os.ReadFile(filepath.Join(out, "report.html"))
	require.NoError(t, err)
	page := string(b)
	assert.NotRegexp(t, `(?i)(src|href)\s*=\s*"(https?:)?//`, page, "no external fetch")
	assert.NotRegexp(t, `(?i)<link\b|@import|<script\b`, page, "no stylesheet, import or script to load")
	assert.Equal(t, 3, strings.Count(page, `<svg class="plot"`), "the three plots are inline")
	assert.NotContains(t, page, "<?xml", "no XML prolog inside HTML")
	assert.Contains(t, page, `<meta name="viewport" content="width=device-width, initial-scale=1">`)
}

func TestMarkdownEscapes(t *testing.T) {
	assert.Equal(t, `a \| b \*c\* \_d\_ \~ \<x\>`, mdCell("a | b *c* _d_ ~ <x>"))
	assert.Equal(t, `\# not a heading`, mdEscape("# not a heading"))
	assert.Equal(t, `\- not a list`, mdEscape("- not a list"))
	assert.Equal(t, `1\. not a list`, mdEscape("1. not a list"))
}

func TestDocWriterCapturesTables(t *testing.T) {
	d := &document{}
	w := newDocWriter(d)
	require.NoError(t, writeMatrixText(w, &MatrixSection{Target: "h:1", LimitBitsPerSecond: 5e9, DurationSeconds: 2, Rows: []MatrixRow{
		{Scenario: "TCP 1 stream", Direction: "upload", Protocol: "tcp", ReceivedBitsPerSecond: 4.7e9, PercentOfLimit: 94, Retransmits: 0, SenderCPUPercent: 12, LimitedBy: "limit", LimitedByDetail: "94% of it"},
	}}))
	w.flush()
	var text bytes.Buffer
	require.NoError(t, writeMatrixText(&text, &MatrixSection{Target: "h:1", LimitBitsPerSecond: 5e9, DurationSeconds: 2, Rows: []MatrixRow{
		{Scenario: "TCP 1 stream", Direction: "upload", Protocol: "tcp", ReceivedBitsPerSecond: 4.7e9, PercentOfLimit: 94, Retransmits: 0, SenderCPUPercent: 12, LimitedBy: "limit", LimitedByDetail: "94% of it"},
	}}))
	require.Len(t, d.tables(), 1)
	tb := d.tables()[0]
	assert.Equal(t, "scenario", tb.header[0])
	require.Len(t, tb.rows, 1)
	assert.Equal(t, []string{"TCP 1 stream", "upload", "4.70", "94.0", "-", "12.0", "0", "-", "-", "limit (94% of it)"}, tb.rows[0])
	assert.Equal(t, "E2 matrix: h:1, 2 s runs, judged against a limit of 5G bits/s", d.blocks[0].heading)
	for _, c := range tb.rows[0] {
		assert.Contains(t, text.String(), c, "the document's cells are the text table's")
	}
	assert.Equal(t, []bool{false, false, true, true, true, true, true, true, true, false}, numericColumns(tb))
}

func TestReproduceCommands(t *testing.T) {
	rep := &Report{
		Metadata: &runinfo.Metadata{NetperfkitVersion: "v0.3.0", Settings: map[string]string{
			"paths": "same=10.0.0.5@25G,cross=10.1.0.7", "tport": "5202", "lport": "11112", "matrix": "10.0.0.5:5300"}},
		Command: []string{"-paths=same=10.0.0.5@25G,cross=10.1.0.7", "-tport=5202", "-lport=11112", "-matrix=10.0.0.5:5300",
			"-label=a b", "-cache-password=$NETPERFKIT_CACHE_PASSWORD"},
	}
	assert.Equal(t, []string{
		"# on every -paths host (10.0.0.5, 10.1.0.7): an iperf3 server and a sockperf UDP server",
		"iperf3 -s -p 5202", "sockperf server -p 11112",
		"# on the -matrix host (10.0.0.5): an iperf3 server", "iperf3 -s -p 5300",
		"# the cache password is read from $NETPERFKIT_CACHE_PASSWORD",
		"# in a clone of netperfkit (this run: v0.3.0)",
		`go run ./examples/report -paths=same=10.0.0.5@25G,cross=10.1.0.7 -tport=5202 -lport=11112 -matrix=10.0.0.5:5300 '-label=a b' -cache-password="$NETPERFKIT_CACHE_PASSWORD"`,
	}, reproduceCommands(rep))
}

func TestCommandArgsHidePassword(t *testing.T) {
	var stderr bytes.Buffer
	o, err := parseFlags([]string{"-cache-password", "s3cret", "-json", "-d", "3s"}, &stderr)
	require.NoError(t, err)
	assert.Equal(t, []string{"-cache-password=$NETPERFKIT_CACHE_PASSWORD", "-d=3s", "-json"}, o.command)
	b, err := json.Marshal(&Report{Command: o.command})
	require.NoError(t, err)
	assert.NotContains(t, string(b), "s3cret")
}

// FuzzMarkdownCell renders any cell text in a GitHub-flavoured Markdown
// table and checks that it stays one cell holding the same text.
func FuzzMarkdownCell(f *testing.F) {
	for _, s := range []string{"~ (p=0.400 n=3) ¹", "a | b", "*x* _y_ `z`", "<b>&amp;</b>", "[l](u) ![i](u)", "# h", "1. x", `\|`, "www.example.com"} {
		f.Add(s)
	}
	md := goldmark.New(goldmark.WithExtensions(extension.GFM))
	tags := regexp.MustCompile(`<[^>]*>`)
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) || strings.ContainsFunc(s, unicode.IsControl) || strings.ContainsRune(s, '\uFFFD') {
			t.Skip("cells are printable text")
		}
		src := "| h | x |\n| --- | --- |\n| " + mdCell(s) + " | end |\n"
		var out bytes.Buffer
		require.NoError(t, md.Convert([]byte(src), &out))
		cells := regexp.MustCompile(`(?s)<td>(.*?)</td>`).FindAllStringSubmatch(out.String(), -1)
		require.Len(t, cells, 2, "one row of two cells: %q -> %s", src, out.String())
		got := html.UnescapeString(tags.ReplaceAllString(cells[0][1], ""))
		// GFM trims a cell of CommonMark's whitespace, which is ASCII:
		// a Unicode space such as U+2000 is the cell's text.
		assert.Equal(t, strings.Trim(s, " \t\n\v\f\r"), got, "%q", src)
		assert.Equal(t, "end", cells[1][1])
	})
}

// TestAlignTables turns a column-aligned text table into a table and
// leaves a block with an empty cell (cells would shift) preformatted.
func TestAlignTables(t *testing.T) {
	d := &document{}
	w := newDocWriter(d)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "path\tphase\tlimited by\t\nloopback\t1-flow\t-\t\nsame-az\tn-stream\tpps allowance\t\n")
	require.NoError(t, tw.Flush())
	fmt.Fprint(w, "note without alignment\n")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "a\tb\tc\t\nx\t\tz\t\n")
	require.NoError(t, tw.Flush())
	w.flush()
	d.alignTables()
	require.Len(t, d.blocks, 3)
	require.NotNil(t, d.blocks[0].table)
	assert.Equal(t, []string{"path", "phase", "limited by"}, d.blocks[0].table.header)
	assert.Equal(t, [][]string{{"loopback", "1-flow", "-"}, {"same-az", "n-stream", "pps allowance"}}, d.blocks[0].table.rows)
	assert.Equal(t, "note without alignment", d.blocks[1].text)
	assert.Nil(t, d.blocks[2].table, "an empty cell: the columns cannot be told apart")
	assert.Len(t, d.blocks[2].pre, 2)
}
