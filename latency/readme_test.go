package latency_test

import (
	"testing"
)

// TestReadmeExample runs the README's snippet (Example_readme) against its
// in-process server: it must measure without a fatal error.
func TestReadmeExample(t *testing.T) {
	Example_readme()
}
