package throughput

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDependencies keeps the package light: beyond the standard library it
// may pull in golang.org/x/sys, netperfkit's internal packages and
// throughput/iperf3auth (credential types, standard library only).
func TestDependencies(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, p := range strings.Fields(string(out)) {
		ok := p == "github.com/netperfkit/netperfkit/throughput" ||
			p == "github.com/netperfkit/netperfkit/throughput/iperf3auth" ||
			strings.HasPrefix(p, "github.com/netperfkit/netperfkit/internal/") ||
			strings.HasPrefix(p, "golang.org/x/sys/")
		require.True(t, ok, "throughput pulls in %s", p)
	}
}
