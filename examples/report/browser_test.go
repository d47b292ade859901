package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/internal/peertest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// layoutCheck runs in the page after everything above it is laid out and
// posts what it measured to the frame around the page: the viewport, the
// document's size, the tables and plots of each section, and every element
// that reaches past the viewport's edges.
const layoutCheck = `<script>
(function () {
  var vw = window.innerWidth;
  var out = {width: vw, scrollWidth: document.documentElement.scrollWidth,
             height: document.documentElement.scrollHeight, sections: {}, plots: [], overflow: []};
  document.querySelectorAll('main > section').forEach(function (s) {
    out.sections[s.id] = {tables: s.querySelectorAll('table').length, plots: s.querySelectorAll('svg.plot').length,
                          rows: s.querySelectorAll('table.data tbody tr').length};
  });
  document.querySelectorAll('svg.plot').forEach(function (p) {
    var r = p.getBoundingClientRect();
    out.plots.push({width: r.width, height: r.height});
  });
  document.querySelectorAll('body *').forEach(function (el) {
    var r = el.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) { return; }
    if (r.right > vw + 0.5 || r.left < -0.5) {
      out.overflow.push(el.tagName + ' ' + (el.textContent || '').slice(0, 40) + ' [' + Math.round(r.left) + ', ' + Math.round(r.right) + ']');
    }
  });
  parent.postMessage(JSON.stringify(out), '*');
})();
</script>`

// frameFor is a page that shows page (the report's HTML) in a frame of
// width x height CSS pixels: headless Chromium's window is at least 500
// px wide, and a frame is a viewport of any width. The frame's messages
// (layoutCheck's) land in a <pre id="layout-check"> for --dump-dom.
func frameFor(page string, width, height int) string {
	return fmt.Sprintf(`<!DOCTYPE html>
<html><head><meta charset="utf-8"><style>html, body { margin: 0; padding: 0; background: #fff; } iframe { border: 0; display: block; }</style></head>
<body>
<script>window.addEventListener('message', function (e) { var p = document.createElement('pre'); p.id = 'layout-check'; p.textContent = e.data; document.body.appendChild(p); });</script>
<iframe width="%d" height="%d" srcdoc="%s"></iframe>
</body></html>`, width, height, html.EscapeString(page))
}

type layoutResult struct {
	Width       float64 `json:"width"`
	ScrollWidth float64 `json:"scrollWidth"`
	Height      float64 `json:"height"`
	Sections    map[string]struct {
		Tables, Plots, Rows int
	} `json:"sections"`
	Plots    []struct{ Width, Height float64 } `json:"plots"`
	Overflow []string                          `json:"overflow"`
}

// chromiumBinary finds Debian's chromium (or another Chromium build).
func chromiumBinary(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	peertest.Missing(t, "no chromium to render report.html", "apt-get install chromium")
	return ""
}

// runChromium runs headless Chromium on page with a window width x height
// and the extra arguments, and returns its standard output.
func runChromium(t *testing.T, bin, page string, width, height int, args ...string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	all := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
		"--user-data-dir=" + t.TempDir(), fmt.Sprintf("--window-size=%d,%d", width, height)}, args...)
	cmd := exec.CommandContext(ctx, bin, append(all, "file://"+page)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "chromium: %s", stderr.String())
	return string(out)
}

// screenshotDir is where the screenshots stay for people to look at:
// $NETPERFKIT_TEST_OUTPUT, else a fixed directory under the temp dir.
func screenshotDir(t *testing.T) string {
	dir := os.Getenv("NETPERFKIT_TEST_OUTPUT")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "netperfkit-report-html")
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	return dir
}

var layoutJSON = regexp.MustCompile(`(?s)<pre id="layout-check">(.*?)</pre>`)

// checkHTMLInBrowser loads report.html in headless Chromium at a laptop's
// and a phone's width, checks from the DOM that every table and plot is
// there and nothing reaches past the viewport, and writes a full-page
// screenshot of each.
func checkHTMLInBrowser(t *testing.T, out string) {
	bin := chromiumBinary(t)
	b, err := os.ReadFile(filepath.Join(out, "report.html"))
	require.NoError(t, err)
	dir := screenshotDir(t)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "report.html"), b, 0o644))
	for _, name := range []string{"report.md", "report.json"} {
		if c, err := os.ReadFile(filepath.Join(out, name)); err == nil {
			require.NoError(t, os.WriteFile(filepath.Join(dir, name), c, 0o644))
		}
	}
	checked := strings.Replace(string(b), "</body>", layoutCheck+"\n</body>", 1)
	for _, width := range []int{1280, 390} {
		// A frame taller than the page: the page never scrolls inside it.
		framed := filepath.Join(t.TempDir(), "framed.html")
		require.NoError(t, os.WriteFile(framed, []byte(frameFor(checked, width, 40000)), 0o644))
		dom := runChromium(t, bin, framed, max(width, 500), 900, "--dump-dom", "--virtual-time-budget=5000")
		m := layoutJSON.FindStringSubmatch(dom)
		require.NotNil(t, m, "the check ran in the page at %d px", width)
		var lr layoutResult
		require.NoError(t, json.Unmarshal([]byte(html.UnescapeString(m[1])), &lr))
		assert.InDelta(t, width, lr.Width, 1, "the viewport is %d px wide", width)
		assert.LessOrEqual(t, lr.ScrollWidth, lr.Width, "no horizontal scrolling at %d px", width)
		assert.Empty(t, lr.Overflow, "elements past the viewport at %d px", width)
		for id, n := range wantTables {
			assert.Equal(t, n, lr.Sections[id].Tables, "tables of %s at %d px", id, width)
		}
		for _, id := range []string{"e1-paths", "e2-matrix", "e3-cache"} {
			assert.Equal(t, 1, lr.Sections[id].Plots, "plot of %s at %d px", id, width)
		}
		assert.Contains(t, lr.Sections, "reproduce")
		require.Len(t, lr.Plots, 3)
		for _, p := range lr.Plots {
			assert.Greater(t, p.Width, float64(width)/2, "a plot fills the column at %d px", width)
			assert.Greater(t, p.Height, p.Width/3, "a plot keeps its aspect at %d px", width)
		}
		shot := filepath.Join(dir, fmt.Sprintf("report-%dpx.png", width))
		height := min(int(lr.Height), 16000)
		require.NoError(t, os.WriteFile(framed, []byte(frameFor(string(b), width, height)), 0o644))
		runChromium(t, bin, framed, max(width, 500), height, "--screenshot="+shot, "--virtual-time-budget=5000")
		cropWidth(t, shot, width)
		t.Logf("screenshot at %d px: %s", width, shot)
	}
}

// cropWidth cuts the screenshot in file to width pixels: the frame, without
// the rest of the at least 500 px window.
func cropWidth(t *testing.T, file string, width int) {
	f, err := os.Open(file)
	require.NoError(t, err)
	img, err := png.Decode(f)
	f.Close()
	require.NoError(t, err)
	b := img.Bounds()
	require.GreaterOrEqual(t, b.Dx(), width, "the screenshot holds the frame")
	sub, ok := img.(interface {
		SubImage(r image.Rectangle) image.Image
	})
	require.True(t, ok)
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, sub.SubImage(image.Rect(b.Min.X, b.Min.Y, b.Min.X+width, b.Max.Y))))
	require.NoError(t, os.WriteFile(file, buf.Bytes(), 0o644))
}
