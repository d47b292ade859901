package pathlab

import (
	"os"
	"testing"
)

// Main is the TestMain of a package whose tests Build binaries: it runs the
// tests, removes what Build made, and exits with the tests' code.
//
//	func TestMain(m *testing.M) { pathlab.Main(m) }
func Main(m *testing.M) {
	code := m.Run()
	RemoveBuilds()
	os.Exit(code)
}
