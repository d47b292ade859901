package median_test

import (
	"testing"

	"github.com/netperfkit/netperfkit/internal/peertest"
)

// TestReadmeExample runs the README's snippet (Example_readme) against a
// local server: it must probe and run both modes without a fatal error.
func TestReadmeExample(t *testing.T) {
	peertest.Binary(t, peertest.CacheInstallHint, "valkey-server", "redis-server")
	Example_readme()
}
