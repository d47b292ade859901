package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCountsOnceWhereUsersReachIt builds a small module in which a public
// package re-exports a leaf package's type through an alias and exposes an
// internal type through a field, and checks that each is counted once, in the
// package users name it from.
func TestCountsOnceWhereUsersReachIt(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"go.mod": "module " + module + "\n\ngo 1.26\n",
		"flow/leaf/leaf.go": `package leaf
// Result is the leaf's type, re-exported by flow.
type Result struct{ Bytes, Packets int }
// Total is a method users reach through the alias.
func (Result) Total() int { return 0 }
`,
		"internal/wire/wire.go": `package wire
// Header is internal, exposed by flow.Config.Header.
type Header struct{ Version int; secret int }
`,
		"flow/flow.go": `package flow
import (
	"` + module + `/flow/leaf"
	"` + module + `/internal/wire"
)
// Result is leaf.Result.
type Result = leaf.Result
// Config exposes an internal type.
type Config struct{ Header wire.Header; Streams int }
// Run runs.
func Run(Config) Result { return Result{} }
`,
		"examples/tool/main.go": "package main\n\n// Exported is in a main package: not API.\nfunc Exported() {}\n\nfunc main() {}\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	}
	t.Chdir(dir)
	c, err := count()
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{
		"flow Result", "flow Result.Bytes", "flow Result.Packets", "flow Result.Total",
		"flow Header", "flow Header.Version",
		"flow Config", "flow Config.Header", "flow Config.Streams", "flow Run",
	}, c.names["flow"], "the alias's type and the internal type count in flow")
	assert.Empty(t, c.names["flow/leaf"], "a type behind an alias is not counted twice")
	assert.Equal(t, 3, c.types["flow"])
	_, hasMain := c.names["examples/tool"]
	assert.False(t, hasMain)
}

func TestBudgetNamesTheBreak(t *testing.T) {
	c := &counts{names: map[string][]string{"throughput": make([]string, 781)}, types: map[string]int{"throughput": 10}}
	var b strings.Builder
	assert.False(t, c.withinBudget(&b))
	assert.Contains(t, b.String(), "core packages export 781 names")
	c.names["throughput"] = c.names["throughput"][:780]
	assert.True(t, c.withinBudget(&b))
}
