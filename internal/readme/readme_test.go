package readme

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// documents are the pages whose Go snippets must be marked Example or test
// regions: the README (its quick start) and the package tour it links to.
var documents = []string{"README.md", "docs/tour.md"}

const (
	begin = "// README begin"
	end   = "// README end"
)

// snippets returns README.md's ```go blocks.
func snippets(t *testing.T, readme string) []string {
	t.Helper()
	var out []string
	rest := readme
	for {
		_, after, ok := strings.Cut(rest, "```go\n")
		if !ok {
			return out
		}
		body, tail, ok := strings.Cut(after, "```\n")
		require.True(t, ok, "README.md: an unclosed ```go block")
		out = append(out, body)
		rest = tail
	}
}

// regions returns, per test file under root, the text between each pair of
// README markers with the example's indentation (that of the begin marker)
// taken off every line.
func regions(t *testing.T, root string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") || strings.HasSuffix(path, "readme/readme_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		out[path] = append(out[path], markedRegions(t, path, string(b))...)
		return nil
	})
	require.NoError(t, err)
	return out
}

func markedRegions(t *testing.T, path, src string) []string {
	var out []string
	lines := strings.Split(src, "\n")
	for i := 0; i < len(lines); i++ {
		indent, ok := strings.CutSuffix(lines[i], begin)
		if !ok || strings.TrimSpace(indent) != "" {
			continue
		}
		var body []string
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != end; i++ {
			body = append(body, strings.TrimPrefix(lines[i], indent))
		}
		require.Less(t, i, len(lines), "%s: %q without %q", path, begin, end)
		// gofmt keeps a blank line between a top-level declaration and
		// the end marker after it; the README's block has none.
		out = append(out, strings.TrimRight(strings.Join(body, "\n"), "\n")+"\n")
	}
	return out
}

// TestReadmeSnippetsAreExamples fails when a snippet of README.md or
// docs/tour.md is not, to the byte, the marked body of an Example function
// (or, for the README's quick start, of a test file), or when a marked body
// is in neither.
func TestReadmeSnippetsAreExamples(t *testing.T) {
	var blocks []string
	for _, doc := range documents {
		b, err := os.ReadFile("../../" + doc)
		require.NoError(t, err)
		got := snippets(t, string(b))
		require.NotEmpty(t, got, "%s has no Go snippets", doc)
		blocks = append(blocks, got...)
	}
	inReadme := map[string]bool{}
	for _, b := range blocks {
		inReadme[b] = true
	}
	marked := map[string]string{}
	for path, rs := range regions(t, "../..") {
		for _, r := range rs {
			marked[r] = path
			assert.True(t, inReadme[r], "%s: its README region is in neither README.md nor docs/tour.md (update them):\n%s", path, r)
		}
	}
	for _, b := range blocks {
		_, ok := marked[b]
		assert.True(t, ok, "a README.md or docs/tour.md snippet is no Example's README region (write it as one, between %q and %q):\n%s", begin, end, b)
	}
}
