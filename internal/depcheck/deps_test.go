package depcheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	module = "github.com/netperfkit/netperfkit"
	hdr    = "github.com/HdrHistogram/hdrhistogram-go"
)

// allowed is what each package may pull in besides the standard library:
// the third-party modules and our own packages (a trailing "/" allows
// every package under a directory). It is the one statement of the
// dependency rule: docs/architecture.md explains the floors and the
// packages' doc.go files point here instead of restating it.
var allowed = []struct {
	pkg     string
	modules []string
	ours    []string
}{
	{"ethtool", []string{"golang.org/x/sys"}, nil},
	{"srd", []string{"golang.org/x/sys"}, []string{"ethtool"}},
	{"latency", []string{hdr, "golang.org/x/sys"}, []string{"internal/"}},
	{"latency/slo", []string{hdr, "golang.org/x/sys"}, []string{"internal/", "latency"}},
	{"latency/responsiveness", []string{hdr, "golang.org/x/sys"}, []string{"internal/", "latency"}},
	{"latency/latencytest", []string{hdr, "golang.org/x/sys"}, []string{"internal/", "latency", "latency/shard"}},
	// shard results and their merge: no cgo, no cache, nothing beyond latency.
	{"latency/shard", []string{hdr, "golang.org/x/sys"}, []string{"internal/", "latency"}},
	// throughput has no histogram: only the kernel's interfaces.
	// throughput/iperf3auth is the iperf3 credentials a Config carries;
	// ethtool (x/sys only) reads the ENA allowance counters of the UDP
	// loss ledger (issue 32).
	{"throughput", []string{"golang.org/x/sys"}, []string{"internal/", "throughput/iperf3auth", "ethtool"}},
	{"throughput/iperf3fmt", []string{"golang.org/x/sys"}, []string{"internal/", "throughput", "throughput/iperf3auth", "ethtool"}},
	{"throughput/iperf3auth", nil, []string{"internal/"}},
	// The one home of throughput's Config and Result (docs/architecture.md):
	// a leaf below throughput and internal/iperf3doc, which import it.
	{"internal/flowmodel", nil, []string{"throughput/iperf3auth", "internal/iperfauth"}},
	{"internal/iperf3doc", nil, []string{"internal/flowmodel", "throughput/iperf3auth", "internal/iperfauth"}},
	{"throughput/throughputtest", []string{"golang.org/x/sys"}, []string{"internal/", "throughput", "throughput/iperf3auth", "ethtool"}},
	{"throughput/underload", []string{hdr, "golang.org/x/sys"},
		[]string{"internal/", "latency", "latency/responsiveness", "throughput", "throughput/iperf3auth", "ethtool"}},
	// cache: no AWS SDK (the IAM token source lives in cache/iam), no
	// prometheus and no valkey-glide (cgo, in cache/glide).
	{"cache", []string{hdr, "golang.org/x/sys"}, []string{"internal/", "latency"}},
	{"cache/median", []string{hdr, "golang.org/x/sys"}, []string{"internal/", "latency", "cache"}},
	{"cache/cachetest", []string{hdr, "golang.org/x/sys"}, []string{"internal/", "latency", "latency/shard", "cache"}},
	// runinfo reads EC2's instance identity with its own IMDSv2 client in
	// net/http: no AWS module.
	{"runinfo", []string{"golang.org/x/sys"}, []string{"ethtool"}},
	// The E1 experiment composes the primitives; it adds no module of its own.
	{"srd/srdexperiment", []string{hdr, "golang.org/x/sys"},
		[]string{"ethtool", "srd", "latency", "throughput", "throughput/iperf3auth", "internal/"}},
}

// listed is the part of `go list -json` this test reads.
type listed struct {
	ImportPath string
	Standard   bool
	Module     *struct {
		Path string
		Main bool
	}
}

// deps runs `go list -deps -json` on pkg and returns the third-party
// modules and our own packages (relative to the module) it pulls in,
// itself left out.
func deps(t *testing.T, goCmd, pkg string) (modules, ours []string) {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command(goCmd, "list", "-deps", "-json=ImportPath,Standard,Module", module+"/"+pkg)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "go list %s: %s", pkg, stderr.String())
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else {
			require.NoError(t, err)
		}
		switch {
		case p.Standard || p.Module == nil:
		case p.Module.Main:
			if rel := strings.TrimPrefix(p.ImportPath, module+"/"); rel != pkg {
				ours = append(ours, rel)
			}
		case !slices.Contains(modules, p.Module.Path):
			modules = append(modules, p.Module.Path)
		}
	}
	sort.Strings(modules)
	sort.Strings(ours)
	return modules, ours
}

// internalOf reports whether p is one of allow's internal packages, which
// are part of it: latency/internal/usec is part of latency.
func internalOf(p, allow string) bool {
	return strings.HasPrefix(p, strings.TrimSuffix(allow, "/")+"/internal/")
}

func TestCorePackagesPullOnlyTheirAllowedDependencies(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH: cannot list dependencies")
	}
	for _, a := range allowed {
		t.Run(a.pkg, func(t *testing.T) {
			modules, ours := deps(t, goCmd, a.pkg)
			var extraModules, extraOurs []string
			for _, m := range modules {
				if !slices.Contains(a.modules, m) {
					extraModules = append(extraModules, m)
				}
			}
			for _, p := range ours {
				if !slices.ContainsFunc(a.ours, func(allow string) bool {
					return p == allow || strings.HasSuffix(allow, "/") && strings.HasPrefix(p, allow) ||
						internalOf(p, allow)
				}) && !internalOf(p, a.pkg) {
					extraOurs = append(extraOurs, p)
				}
			}
			assert.Empty(t, extraModules, "%s pulls in modules outside its allow-list %v", a.pkg, a.modules)
			assert.Empty(t, extraOurs, "%s imports our packages outside its allow-list %v", a.pkg, a.ours)
		})
	}
}

// TestDepsSeesAModule keeps the test honest: the listing must find what is
// there, or an empty listing would pass every row.
func TestDepsSeesAModule(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH: cannot list dependencies")
	}
	modules, _ := deps(t, goCmd, "ethtool")
	assert.Equal(t, []string{"golang.org/x/sys"}, modules)
	_, ours := deps(t, goCmd, "srd")
	assert.Equal(t, []string{"ethtool"}, ours)
}
