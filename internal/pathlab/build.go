package pathlab

import (
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sync"
	"testing"

	"github.com/netperfkit/netperfkit/internal/peertest"
)

// builds holds the binaries Build made in this test process: a command is
// built once per run, whichever tests need it.
var builds struct {
	sync.Mutex
	dir  string
	bins map[string]string
}

// Build builds the main package pkg (an import path such as
// "github.com/netperfkit/netperfkit/examples/iperf3") with go build, once
// per test process, and returns the binary's path, for running it in a
// namespace with Host.Command. The binaries stay until RemoveBuilds, which
// a TestMain calls after m.Run.
func Build(tb testing.TB, pkg string) string {
	tb.Helper()
	goBin := peertest.Binary(tb, "install Go", "go")
	if goBin == "" {
		return ""
	}
	builds.Lock()
	defer builds.Unlock()
	if p, ok := builds.bins[pkg]; ok {
		return p
	}
	if builds.dir == "" {
		d, err := os.MkdirTemp("", "npk-pathlab-")
		if err != nil {
			tb.Fatalf("pathlab: %v", err)
		}
		builds.dir, builds.bins = d, map[string]string{}
	}
	out := filepath.Join(builds.dir, path.Base(pkg))
	if b, err := exec.Command(goBin, "build", "-o", out, pkg).CombinedOutput(); err != nil {
		tb.Fatalf("pathlab: go build %s: %v: %s", pkg, err, b)
	}
	builds.bins[pkg] = out
	return out
}

// RemoveBuilds removes what Build made in this process.
func RemoveBuilds() {
	builds.Lock()
	defer builds.Unlock()
	if builds.dir != "" {
		_ = os.RemoveAll(builds.dir)
	}
	builds.dir, builds.bins = "", nil
}
