package cachecli

import (
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/netperfkit/netperfkit/cache"
)

// Engine names on the command line.
const (
	Glide = "glide"
	Resp  = "resp"
)

// ErrGlideNotBuilt is reported when glide is asked for in a binary built
// without cgo.
var ErrGlideNotBuilt = errors.New("glide engine not built in (needs cgo)")

// Engines returns the engines named, in order, for
// cache.WorkloadConfig.Engine: nil for resp, the glide engine for glide. When
// glide is not built in, it prints ErrGlideNotBuilt to warn and runs resp in
// its place (once). An unknown name is an error.
func Engines(names []string, warn io.Writer) ([]cache.Engine, error) {
	return selectEngines(names, glideEngine(), warn)
}

// selectEngines is Engines with the glide engine given (nil when it is not
// built in).
func selectEngines(names []string, glide cache.Engine, warn io.Writer) ([]cache.Engine, error) {
	var out []cache.Engine
	add := func(e cache.Engine) {
		if !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	for _, n := range names {
		switch {
		case n == Resp:
			add(nil)
		case n == Glide && glide != nil:
			add(glide)
		case n == Glide:
			fmt.Fprintf(warn, "%v: running the %s engine instead\n", ErrGlideNotBuilt, Resp)
			add(nil)
		default:
			return nil, fmt.Errorf("unknown engine %q (want %s or %s)", n, Glide, Resp)
		}
	}
	return out, nil
}

// Name is the name of an engine returned by Engines.
func Name(e cache.Engine) string {
	if e == nil {
		return Resp
	}
	return e.Name()
}
