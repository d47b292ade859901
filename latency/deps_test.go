package latency

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDependencies keeps latency and its sub-packages light: beyond the
// standard library and netperfkit's own packages they import only
// hdrhistogram-go and x/sys, as doc.go states.
func TestDependencies(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go tool is not on PATH")
	}
	out, err := exec.Command(goTool, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}",
		".", "./slo", "./responsiveness", "./latencytest").CombinedOutput()
	require.NoError(t, err, string(out))
	allowed := []string{"github.com/netperfkit/netperfkit/", "github.com/HdrHistogram/hdrhistogram-go", "golang.org/x/sys/"}
	var deps int
	for _, p := range strings.Fields(string(out)) {
		deps++
		ok := false
		for _, a := range allowed {
			ok = ok || p == a || strings.HasPrefix(p, a)
		}
		assert.True(t, ok, "latency pulls in %s", p)
	}
	assert.Positive(t, deps)
}
