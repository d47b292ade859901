package throughput_test

import (
	"io"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// between returns the text of s after the first line containing begin and
// before the next line containing end, or fails.
func between(t *testing.T, s, begin, end string) string {
	t.Helper()
	_, after, ok := strings.Cut(s, begin)
	require.True(t, ok, "no %q", begin)
	_, after, _ = strings.Cut(after, "\n")
	body, _, ok := strings.Cut(after, end)
	require.True(t, ok, "no %q after %q", end, begin)
	return body[:strings.LastIndex(body, "\n")+1]
}

// dedent removes one leading tab from every line, as the example indents
// the snippet once more than the README.
func dedent(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, "\t")
	}
	return strings.Join(lines, "\n")
}

// TestReadmeSnippet keeps docs/tour.md's throughput snippet and Example_readme
// the same, then runs the example: a reverse test whose Total reads the
// received rate (a forward test's Download is nil; Total is not).
func TestReadmeSnippet(t *testing.T) {
	readme, err := os.ReadFile("../docs/tour.md")
	require.NoError(t, err)
	ex, err := os.ReadFile("example_test.go")
	require.NoError(t, err)
	want := between(t, string(readme), "### throughput: iperf3-compatible flows", "```\n")
	want = strings.TrimPrefix(want, "\n```go\n")
	got := dedent(between(t, string(ex), "// README begin", "// README end"))
	assert.Equal(t, want, got, "docs/tour.md's throughput snippet and Example_readme differ")

	out := captureStdout(t, Example_readme)
	assert.Regexp(t, regexp.MustCompile(`^\d+\.\d\d Gbit/s received, -?\d+ retransmits\n$`), out)
	assert.NotRegexp(t, `^0\.00 Gbit/s`, out, "the snippet reads the direction the data flowed")
}

// captureStdout runs f with os.Stdout going to a pipe and returns what it wrote.
func captureStdout(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	old := os.Stdout
	os.Stdout = w
	defer func() { os.Stdout = old }()
	got := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(r)
		got <- string(b)
	}()
	f()
	os.Stdout = old
	require.NoError(t, w.Close())
	return <-got
}
