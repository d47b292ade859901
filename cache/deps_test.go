package cache_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cache and the packages a plain user of it imports pull in only these
// modules: no AWS SDK (cache/iam has it), no Prometheus client, no
// valkey-glide (cache/glide, cgo).
func TestLightImports(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH to list dependencies")
	}
	allowed := []string{
		"github.com/netperfkit/netperfkit",
		"github.com/HdrHistogram/hdrhistogram-go",
		"golang.org/x/sys",
	}
	for _, pkg := range []string{"./", "./median", "./cachetest"} {
		out, err := exec.Command(gobin, "list", "-deps", "-f", "{{with .Module}}{{.Path}}{{end}}", pkg).CombinedOutput()
		require.NoError(t, err, "%s", out)
		var mods []string
		for _, m := range strings.Fields(string(out)) {
			if !slices.Contains(mods, m) {
				mods = append(mods, m)
			}
		}
		require.Contains(t, mods, "github.com/netperfkit/netperfkit", pkg)
		for _, m := range mods {
			assert.Contains(t, allowed, m, "%s pulls in module %s", pkg, m)
		}
	}
	out, err := exec.Command(gobin, "list", "-deps", "-f", "{{with .Module}}{{.Path}}{{end}}", "./iam").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "github.com/aws/aws-sdk-go-v2", "the SDK lives in cache/iam: the check above can see it")
}
