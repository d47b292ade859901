package gomaxprocs

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Set changes nothing when asked for what is set or for 0, and its restore
// brings back what was set before, with or without GOMAXPROCS in the
// environment.
func TestSet(t *testing.T) {
	t.Setenv("GOMAXPROCS", "")
	// Start from the runtime's default, which a restore without the
	// environment variable returns to (go test -cpu sets another).
	orig := runtime.GOMAXPROCS(0)
	runtime.SetDefaultGOMAXPROCS()
	t.Cleanup(func() { runtime.GOMAXPROCS(orig) })
	before := runtime.GOMAXPROCS(0)
	for _, n := range []int{0, -1, before} {
		restore := Set(n)
		assert.Equal(t, before, runtime.GOMAXPROCS(0), "Set(%d)", n)
		restore()
		assert.Equal(t, before, runtime.GOMAXPROCS(0), "Set(%d) restored", n)
	}
	restore := Set(before + 1)
	assert.Equal(t, before+1, runtime.GOMAXPROCS(0))
	restore()
	assert.Equal(t, before, runtime.GOMAXPROCS(0), "back to the default")

	t.Setenv("GOMAXPROCS", "1") // read by Set, not by the running runtime
	restore = Set(before + 2)
	assert.Equal(t, before+2, runtime.GOMAXPROCS(0))
	restore()
	assert.Equal(t, before, runtime.GOMAXPROCS(0), "back to the value before")
}
