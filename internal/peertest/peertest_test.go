package peertest

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRequired(t *testing.T) {
	for v, want := range map[string]bool{"": false, "0": false, "false": false, "1": true, "yes": true} {
		t.Setenv(RequireEnv, v)
		assert.Equal(t, want, Required(), "value %q", v)
	}
}

// fakeTB records what Missing does instead of stopping the real test.
type fakeTB struct {
	testing.TB
	skipped, failed bool
}

func (f *fakeTB) Helper()               {}
func (f *fakeTB) Skipf(string, ...any)  { f.skipped = true }
func (f *fakeTB) Fatalf(string, ...any) { f.failed = true }

func TestBinaryMissing(t *testing.T) {
	t.Setenv(RequireEnv, "")
	f := &fakeTB{}
	assert.Empty(t, Binary(f, "apt-get install nothing", "netperfkit-no-such-binary"))
	assert.True(t, f.skipped)
	assert.False(t, f.failed)

	t.Setenv(RequireEnv, "1")
	f = &fakeTB{}
	Binary(f, "", "netperfkit-no-such-binary")
	assert.True(t, f.failed)
	assert.False(t, f.skipped)
}

func TestBinaryFound(t *testing.T) {
	f := &fakeTB{}
	p := Binary(f, "", "netperfkit-no-such-binary", "sh")
	assert.NotEmpty(t, p)
	assert.False(t, f.skipped || f.failed)
}

func TestBufferConcurrent(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 100; j++ {
				_, _ = b.Write([]byte("ab"))
				_ = b.String()
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, strings.Repeat("ab", 400), b.String())
}

func TestFreePort(t *testing.T) {
	p := FreePort(t)
	assert.Greater(t, p, 0)
	assert.Less(t, p, 1<<16)
	// The port was released: it can be bound again.
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
	require.NoError(t, err)
	require.NoError(t, ln.Close())
}

// TestQuietPorts: the ports lie below the ephemeral range and can each be
// bound on 127.0.0.1 (and ::1 where the host has it) once returned.
func TestQuietPorts(t *testing.T) {
	p := QuietPorts(t, 3)
	assert.GreaterOrEqual(t, p, 1024)
	assert.Less(t, p+2, ephemeralLow())
	for i := range 3 {
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p+i)))
		require.NoError(t, err, "port %d", p+i)
		require.NoError(t, ln.Close())
		if hasIPv6Loopback() {
			ln, err := net.Listen("tcp", net.JoinHostPort("::1", strconv.Itoa(p+i)))
			require.NoError(t, err, "port %d on ::1", p+i)
			require.NoError(t, ln.Close())
		}
	}
}

// TestNewIPerf3Features points NETPERFKIT_IPERF3 at a script that prints a
// version line, and checks that a feature it lacks makes the peer missing.
func TestNewIPerf3Features(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "iperf3")
	require.NoError(t, os.WriteFile(bin, []byte("#!/bin/sh\necho 'iperf 3.21 (cJSON 1.7.15)'\necho 'Optional features available: CPU affinity setting, authentication'\n"), 0o755))
	t.Setenv(NewIPerf3Env, bin)
	t.Setenv(RequireEnv, "1")
	f := &fakeTB{}
	assert.Equal(t, bin, NewIPerf3(f, "authentication"))
	assert.False(t, f.failed)
	f = &fakeTB{}
	assert.Empty(t, NewIPerf3(f, "authentication", "SCTP"))
	assert.True(t, f.failed, "a build without SCTP is missing when peers are required")
	t.Setenv(NewIPerf3Env, filepath.Join(t.TempDir(), "none"))
	f = &fakeTB{}
	assert.Empty(t, NewIPerf3(f))
	assert.True(t, f.failed)
}
