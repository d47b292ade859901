package main

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/internal/peertest"
)

// authSetup writes a key pair and a users file for mario/rossi.
func authSetup(t *testing.T) (pub, priv, users string) {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	dir := t.TempDir()
	spki, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	require.NoError(t, err)
	pub, priv, users = filepath.Join(dir, "pub.pem"), filepath.Join(dir, "priv.pem"), filepath.Join(dir, "users.csv")
	require.NoError(t, os.WriteFile(pub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: spki}), 0o600))
	require.NoError(t, os.WriteFile(priv, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}), 0o600))
	sum := sha256.Sum256([]byte("{mario}rossi"))
	require.NoError(t, os.WriteFile(users, []byte("mario,"+hex.EncodeToString(sum[:])+"\n"), 0o600))
	return pub, priv, users
}

// ourServer runs this tool's server with args until the test ends and
// returns its port and output.
func ourServer(t *testing.T, args ...string) (int, *peertest.Buffer, *peertest.Buffer) {
	t.Helper()
	port := peertest.FreePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	var sout, serr peertest.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, append([]string{"iperf3", "-s", "-p", strconv.Itoa(port)}, args...), &sout, &serr)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	// With -J or --json-stream the server prints nothing until a test
	// ends: a connection that gets in tells it is up (it is then a silent
	// client, which the server times out without a report).
	jsonOut := slices.Contains(args, "-J") || slices.Contains(args, "--json-stream")
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(sout.String(), "Server listening") {
		if jsonOut {
			if c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err == nil {
				c.Close()
				break
			}
		}
		require.True(t, time.Now().Before(deadline), "server did not start: %s", serr.String())
		time.Sleep(20 * time.Millisecond)
	}
	return port, &sout, &serr
}

func TestAuthOurClientOurServer(t *testing.T) {
	pub, priv, users := authSetup(t)
	port, _, serr := ourServer(t, "--rsa-private-key-path", priv, "--authorized-users-path", users)
	args := []string{"-c", "127.0.0.1", "-p", strconv.Itoa(port), "-t", "1", "--username", "mario", "--rsa-public-key-path", pub}
	t.Setenv("IPERF3_PASSWORD", "rossi")
	out, errOut, code := runTool(context.Background(), args...)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "iperf Done.")
	t.Setenv("IPERF3_PASSWORD", "wrong-pw")
	out, errOut, code = runTool(context.Background(), args...)
	assert.Equal(t, 1, code)
	assert.Equal(t, "iperf3: SERVER ERROR - test authorization failed\niperf3: error - test authorization failed\n", errOut)
	assert.NotContains(t, out+errOut, "wrong-pw")
	_, errOut, code = runTool(context.Background(), "-c", "127.0.0.1", "-p", strconv.Itoa(port), "-t", "1")
	assert.Equal(t, 1, code, "no credentials")
	assert.Contains(t, errOut, "error - test authorization failed")
	assert.Eventually(t, func() bool { return strings.Count(serr.String(), "iperf3: error - test authorization failed\n") == 2 },
		5*time.Second, 20*time.Millisecond, serr.String())
	assert.NotContains(t, serr.String(), "wrong-pw")
}

// TestAuth321 checks this tool against iperf3 3.21 in both roles.
func TestAuth321(t *testing.T) {
	bin := peertest.NewIPerf3(t)
	pub, priv, users := authSetup(t)
	// 3.21's client against our server.
	port, _, serr := ourServer(t, "--rsa-private-key-path", priv, "--authorized-users-path", users)
	c321 := func(pw string, auth bool) (string, error) {
		args := []string{"-c", "127.0.0.1", "-p", strconv.Itoa(port), "-t", "1"}
		if auth {
			args = append(args, "--username", "mario", "--rsa-public-key-path", pub)
		}
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "IPERF3_PASSWORD="+pw)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := c321("rossi", true)
	require.NoError(t, err, out)
	out, err = c321("nope", true)
	require.Error(t, err)
	assert.Contains(t, out, "iperf3: error - test authorization failed")
	out, err = c321("", false)
	require.Error(t, err, "a stock client without credentials")
	assert.Contains(t, out, "iperf3: error - test authorization failed")
	assert.Eventually(t, func() bool { return strings.Count(serr.String(), "test authorization failed") == 2 },
		5*time.Second, 20*time.Millisecond, serr.String())

	// Our client against 3.21's server, which closes the connection on a
	// refusal: we say what its own client says.
	sport := peertest.FreePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	var sout peertest.Buffer
	srv := exec.CommandContext(ctx, bin, "-s", "--forceflush", "-p", strconv.Itoa(sport), "--rsa-private-key-path", priv, "--authorized-users-path", users)
	srv.Stdout, srv.Stderr = &sout, &sout
	require.NoError(t, srv.Start())
	t.Cleanup(func() {
		cancel()
		_ = srv.Wait()
	})
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(sout.String(), "Server listening"); {
		require.True(t, time.Now().Before(deadline))
		time.Sleep(20 * time.Millisecond)
	}
	args := []string{"-c", "127.0.0.1", "-p", strconv.Itoa(sport), "-t", "1", "--username", "mario", "--rsa-public-key-path", pub}
	t.Setenv("IPERF3_PASSWORD", "rossi")
	gotOut, errOut, code := runTool321(args...)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, gotOut, "iperf Done.")
	t.Setenv("IPERF3_PASSWORD", "nope")
	_, errOut, code = runTool321(args...)
	assert.Equal(t, 1, code)
	assert.Equal(t, "iperf3: error - control socket has closed unexpectedly\n", errOut)
}

// TestAllowedClientsAndBind: a client bound (-B) to an address outside
// --allowed-clients gets 3.21's "busy" answer; one inside runs; --cport
// sets the data stream's port.
func TestAllowedClientsAndBind(t *testing.T) {
	if ln, err := net.Listen("tcp", "127.0.0.2:0"); err != nil {
		t.Skipf("loopback aliases are not available here: %v", err)
	} else {
		ln.Close()
	}
	port, _, serr := ourServer(t, "--allowed-clients", "127.0.0.1/32,::1", "--max-tests-per-client", "2", "-V")
	p := strconv.Itoa(port)
	_, errOut, code := runTool(context.Background(), "-c", "127.0.0.1", "-p", p, "-t", "1", "-B", "127.0.0.2")
	assert.Equal(t, 1, code)
	assert.Equal(t, "iperf3: error - the server is busy running a test. try again later\n", errOut)
	assert.Eventually(t, func() bool { return strings.Contains(serr.String(), "refused 127.0.0.2:") }, 5*time.Second, 20*time.Millisecond)
	cport := strconv.Itoa(peertest.FreePort(t))
	out, errOut, code := runTool(context.Background(), "-c", "127.0.0.1", "-p", p, "-t", "1", "-B", "127.0.0.1", "--cport", cport)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "local 127.0.0.1 port "+cport+" connected to 127.0.0.1 port "+p)
}

func TestOneOffIdleTimeout(t *testing.T) {
	port := peertest.FreePort(t)
	start := time.Now()
	var sout, serr peertest.Buffer
	code := run(context.Background(), []string{"iperf3", "-s", "-1", "--idle-timeout", "1", "-p", strconv.Itoa(port)}, &sout, &serr)
	assert.Equal(t, 0, code, serr.String())
	assert.GreaterOrEqual(t, time.Since(start), time.Second)
}
