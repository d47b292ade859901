//go:build cgo

package cachecli

import (
	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/cache/glide"
)

// glideEngine returns the glide engine: this binary is built with cgo.
func glideEngine() cache.Engine { return glide.Engine() }

// setGlideLog sends valkey-glide's warnings and errors to file, or turns its
// core logger off when file is empty.
func setGlideLog(file string) error {
	if file == "" {
		return glide.SetLog("off", "")
	}
	return glide.SetLog("warn", file)
}
