//go:build cgo

package cachecli

import (
	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/cache/glide"
)

// glideEngine returns the glide engine: this binary is built with cgo.
func glideEngine() cache.Engine { return glide.Engine() }
