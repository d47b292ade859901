package readme

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestShape keeps the README a library's front page and docs/benchmarks.md a
// method (issue 40): a newcomer meets Go code within the first screen, and
// neither file grows back into a notebook.
func TestShape(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	lines := strings.Split(string(readme), "\n")
	assert.LessOrEqual(t, len(lines)-1, 250, "README.md: at most 250 lines (move detail to docs/)")
	first := -1
	for i, l := range lines {
		if l == "```go" {
			first = i + 1
			break
		}
	}
	require.NotEqual(t, -1, first, "README.md has no Go code block")
	assert.Less(t, first, 80, "README.md: its first Go code block must start before line 80")

	bench, err := os.ReadFile("../../docs/benchmarks.md")
	require.NoError(t, err)
	assert.LessOrEqual(t, strings.Count(string(bench), "\n"), 400,
		"docs/benchmarks.md: at most 400 lines; dated passes belong in git history")
}
