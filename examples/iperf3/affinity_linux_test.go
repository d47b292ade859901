package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// restoreAffinity saves the process's CPU mask and returns what puts it
// back on every thread: -A pins the test binary too.
func restoreAffinity(t *testing.T) func() {
	t.Helper()
	var saved unix.CPUSet
	require.NoError(t, unix.SchedGetaffinity(0, &saved))
	return func() { require.NoError(t, setAllThreads(&saved)) }
}

// TestAffinity: -A n pins every thread of the process to CPU n, as 3.21
// pins itself; a CPU the host lacks is 3.21's error.
func TestAffinity(t *testing.T) {
	defer restoreAffinity(t)()
	_, errOut, code := runTool(context.Background(), "--in-process", "-t", "0.3", "-A", "0")
	require.Equal(t, 0, code, errOut)
	var set unix.CPUSet
	require.NoError(t, unix.SchedGetaffinity(0, &set))
	assert.Equal(t, 1, set.Count())
	assert.True(t, set.IsSet(0))

	_, errOut, code = runTool(context.Background(), "--in-process", "-t", "0.3", "-A", "1024")
	assert.Equal(t, 1, code)
	assert.Equal(t, "iperf3: error - unable to set CPU affinity: Invalid argument\n", errOut)
}
