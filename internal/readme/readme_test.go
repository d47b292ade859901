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
		out = append(out, strings.Join(body, "\n")+"\n")
	}
	return out
}

// TestReadmeSnippetsAreExamples fails when a README snippet is not, to the
// byte, the marked body of an Example function, or when a marked body is no
// longer in the README.
func TestReadmeSnippetsAreExamples(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	blocks := snippets(t, string(readme))
	require.NotEmpty(t, blocks, "README.md has no Go snippets")
	inReadme := map[string]bool{}
	for _, b := range blocks {
		inReadme[b] = true
	}
	marked := map[string]string{}
	for path, rs := range regions(t, "../..") {
		for _, r := range rs {
			marked[r] = path
			assert.True(t, inReadme[r], "%s: its README region is not in README.md (update the README):\n%s", path, r)
		}
	}
	for _, b := range blocks {
		_, ok := marked[b]
		assert.True(t, ok, "README.md snippet is no Example's README region (write it as one, between %q and %q):\n%s", begin, end, b)
	}
}
