package main

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/internal/peertest"
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

// cpus are the last CPU this process may run on and the first it may not.
func cpus(t *testing.T) (last, outside int) {
	var set unix.CPUSet
	require.NoError(t, unix.SchedGetaffinity(0, &set))
	for set.IsSet(outside) {
		outside++
	}
	for c := range len(set) * 64 {
		if set.IsSet(c) {
			last = c
		}
	}
	return last, outside
}

// TestServerAffinity321: -A n,m sends m to the server as 3.21's client
// does: a 3.21 client's reaches our server, ours a 3.21 server; our server
// refuses a CPU outside its mask as 3.21 reports a failed
// sched_setaffinity, and this client prints that refusal as 3.21's client
// does. (The throughput package's tests check which threads the server
// pins.)
func TestServerAffinity321(t *testing.T) {
	defer restoreAffinity(t)()
	bin := peertest.NewIPerf3(t, "CPU affinity setting")
	last, outside := cpus(t)
	sport, sout, serr := ourServer(t, "-d")
	args := []string{"-c", "127.0.0.1", "-p", strconv.Itoa(sport), "-t", "1", "-A", "0," + strconv.Itoa(last)}
	_, errOut, code := exec321(t, bin, args...)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, sout.String(), `"server_affinity": `+strconv.Itoa(last))

	args[len(args)-1] = "0," + strconv.Itoa(outside)
	wantOut, wantErr, wantCode := exec321(t, bin, args...)
	assert.Equal(t, 1, wantCode)
	assert.Equal(t, "iperf3: SERVER ERROR - unable to set CPU affinity: Invalid argument, errno: Invalid argument\n"+
		"iperf3: error - unable to set CPU affinity: Invalid argument\n", wantErr)
	out, errOut, code := runTool(context.Background(), args...)
	assert.Equal(t, 1, code)
	assert.Equal(t, wantErr, errOut)
	assert.Equal(t, wantOut, out)
	assert.Eventually(t, func() bool {
		return strings.Count(serr.String(), "iperf3: error - unable to set CPU affinity: Invalid argument\n") == 2
	}, 10*time.Second, 20*time.Millisecond, "our server says why, as 3.21's does, for each refusal: %s", serr.String())

	// Last: this client pins the test binary to CPU 0 (-A n).
	port := strconv.Itoa(server321(t, bin))
	_, errOut, code = runTool321("-c", "127.0.0.1", "-p", port, "-t", "0.5", "-A", "0,"+strconv.Itoa(last))
	assert.Equal(t, 0, code, "a 3.21 server pins itself: %s", errOut)
}
