//go:build !cgo

package cachecli

import "github.com/netperfkit/netperfkit/cache"

// glideEngine returns nil: valkey-glide needs cgo, which this binary is built
// without.
func glideEngine() cache.Engine { return nil }

// setGlideLog does nothing: without valkey-glide nothing logs.
func setGlideLog(string) error { return nil }
