package iperfauth

import (
	"context"
	"crypto/rsa"
	"crypto/x509"
	"encoding/binary"
	"encoding/json"
	"encoding/pem"
	"io"
	mrand "math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/internal/peertest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// iperf3 control states used here (reference/iperf3-protocol.md).
const (
	stateParamExchange = 9
	stateCreateStreams = 10
	stateAccessDenied  = 0xff // -1 as a signed byte
	stateServerError   = -2
	cookieLen          = 37
	closedNoState      = -100 // not a state: the server closed the connection
)

// keyFiles writes k as a SubjectPublicKeyInfo and a PKCS#1 private key PEM.
func keyFiles(t *testing.T, k *rsa.PrivateKey) (pub, priv string) {
	t.Helper()
	dir := t.TempDir()
	spki, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	require.NoError(t, err)
	pub, priv = filepath.Join(dir, "public.pem"), filepath.Join(dir, "private.pem")
	require.NoError(t, os.WriteFile(pub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: spki}), 0o600))
	require.NoError(t, os.WriteFile(priv, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}), 0o600))
	return pub, priv
}

// TestInteropClient321 runs a stock 3.21 client with credentials against a
// listener that speaks just enough of the protocol to receive its
// parameters, and checks the token with this package.
func TestInteropClient321(t *testing.T) {
	bin := peertest.NewIPerf3(t, "authentication")
	for _, pw := range []string{"S3cret!-pw", "correct horse"} {
		t.Run(pw, func(t *testing.T) { clientToken(t, bin, pw) })
	}
}

func clientToken(t *testing.T, bin, password string) {
	k := key(t)
	pub, _ := keyFiles(t, k)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out peertest.Buffer
	cmd := exec.CommandContext(ctx, bin, "-c", "127.0.0.1", "-p", strconv.Itoa(port), "-t", "1",
		"--username", "alice", "--rsa-public-key-path", pub)
	cmd.Env = append(os.Environ(), "IPERF3_PASSWORD="+password)
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	params := readParams(t, ln)
	tok, _ := params["authtoken"].(string)
	require.NotEmpty(t, tok, "3.21 sends authtoken: %v", params)
	c, err := DecodeToken(k, tok, OAEP)
	if strings.ContainsAny(password, " \t") {
		// 3.21's server reads the password with sscanf's %s: it cannot
		// authenticate one with white space, and neither can this package.
		require.ErrorIs(t, err, ErrToken)
	} else {
		require.NoError(t, err)
		assert.Equal(t, Credentials{User: "alice", Password: password, Unix: c.Unix}, c)
		assert.InDelta(t, time.Now().Unix(), c.Unix, 5)
		users := &Users{entries: []userEntry{{"alice", PasswordHash("alice", password)}}}
		user, err := (&Verifier{Key: k, Users: users}).Verify(tok)
		require.NoError(t, err)
		assert.Equal(t, "alice", user)
	}
	_, err = DecodeToken(k, tok, PKCS1v15)
	assert.ErrorIs(t, err, ErrToken, "3.21 clients always use OAEP")

	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("iperf3 client did not exit")
	}
	assert.NotContains(t, out.String(), password, "the client never prints the password")
}

// readParams accepts one control connection, reads the cookie, asks for the
// parameters and returns them, then refuses the test.
func readParams(t *testing.T, ln net.Listener) map[string]any {
	t.Helper()
	require.NoError(t, ln.(*net.TCPListener).SetDeadline(time.Now().Add(10*time.Second)))
	conn, err := ln.Accept()
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
	cookie := make([]byte, cookieLen)
	_, err = io.ReadFull(conn, cookie)
	require.NoError(t, err)
	_, err = conn.Write([]byte{stateParamExchange})
	require.NoError(t, err)
	var n uint32
	require.NoError(t, binary.Read(conn, binary.BigEndian, &n))
	require.LessOrEqual(t, n, uint32(8192))
	buf := make([]byte, n)
	_, err = io.ReadFull(conn, buf)
	require.NoError(t, err)
	var params map[string]any
	require.NoError(t, json.Unmarshal(buf, &params), "%s", buf)
	_, _ = conn.Write([]byte{stateAccessDenied})
	return params
}

// TestInteropClientPKCS1Refused321 records that a 3.21 client cannot send a
// PKCS#1 v1.5 token at all: --use-pkcs1-padding is a server-only option.
func TestInteropClientPKCS1Refused321(t *testing.T) {
	bin := peertest.NewIPerf3(t, "authentication")
	out, err := exec.Command(bin, "-c", "127.0.0.1", "--use-pkcs1-padding").CombinedOutput()
	require.Error(t, err)
	assert.Contains(t, string(out), "some option you are trying to set is server only")
}

// TestInteropServer321 sends tokens made here to a stock 3.21 server with
// authentication, in both padding modes: the right credentials get
// CREATE_STREAMS, every wrong one gets no test, and the server keeps
// serving the next client.
func TestInteropServer321(t *testing.T) {
	bin := peertest.NewIPerf3(t, "authentication")
	k := key(t)
	_, priv := keyFiles(t, k)
	users := filepath.Join(t.TempDir(), "users.csv")
	require.NoError(t, os.WriteFile(users, []byte("# test users\nalice,"+PasswordHash("alice", "pw")+"\n"), 0o600))
	for _, pad := range []Padding{OAEP, PKCS1v15} {
		t.Run(pad.String(), func(t *testing.T) {
			args := []string{"--rsa-private-key-path", priv, "--authorized-users-path", users, "--time-skew-threshold", "10"}
			if pad == PKCS1v15 {
				args = append(args, "--use-pkcs1-padding")
			}
			port, out := startServer(t, bin, args...)
			now := time.Now().Unix()
			tok := func(user, pw string, ts int64) string {
				s, err := EncodeToken(&k.PublicKey, Credentials{User: user, Password: pw, Unix: ts}, pad)
				require.NoError(t, err)
				return s
			}
			wrongPad := OAEP
			if pad == OAEP {
				wrongPad = PKCS1v15
			}
			other, err := EncodeToken(&k.PublicKey, Credentials{User: "alice", Password: "pw", Unix: now}, wrongPad)
			require.NoError(t, err)
			good := tok("alice", "pw", now)
			ours := &Verifier{Key: k, UsersPath: users, SkewThreshold: 10 * time.Second, Padding: pad}
			for _, tc := range []struct {
				name  string
				token string
				ok    bool
			}{
				{"right", good, true},
				{"wrong password", tok("alice", "wrong", now), false},
				{"unknown user", tok("bob", "pw", now), false},
				{"skewed behind", tok("alice", "pw", now-60), false},
				{"skewed ahead", tok("alice", "pw", now+60), false},
				{"other padding", other, false},
				{"no token", "", false},
				{"replayed inside the window (no replay cache in 3.21)", good, true},
			} {
				// This package decides as 3.21 does for the same token.
				_, verr := ours.Verify(tc.token)
				assert.Equal(t, tc.ok, verr == nil, "%s: %v", tc.name, verr)
				banners := strings.Count(out.String(), "Server listening")
				state := exchange(t, port, tc.token)
				// The server takes the next connection only once it has
				// reset and printed its banner again; until then it would
				// take it for a data stream.
				waitFor(t, out, func(s string) bool { return strings.Count(s, "Server listening") > banners })
				if tc.ok {
					assert.Equal(t, stateCreateStreams, state, tc.name)
				} else {
					// 3.21 sends no ACCESS_DENIED. It never sets i_errno
					// to IEAUTHTEST, so its cleanup either closes the control
					// connection without a state (i_errno still 0: its client
					// says "control socket has closed unexpectedly") or sends
					// SERVER_ERROR with the i_errno an earlier test left.
					assert.Contains(t, []int{closedNoState, stateServerError}, state, tc.name)
				}
			}
			// 3.21 never sets IEAUTHTEST, so its server prints "iperf3:
			// error - " with whatever i_errno held, not "test authorization
			// failed"; it then serves the next client.
			assert.Equal(t, 6, strings.Count(out.String(), "iperf3: error - "), out.String())
			assert.Equal(t, 2, strings.Count(out.String(), "Accepted connection from"), out.String())
		})
	}
}

// startServer runs `iperf3 -s` with args on a free port until the test ends.
func startServer(t *testing.T, bin string, args ...string) (int, *peertest.Buffer) {
	t.Helper()
	port := peertest.FreePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	out := &peertest.Buffer{}
	cmd := exec.CommandContext(ctx, bin, append([]string{"-s", "--forceflush", "-p", strconv.Itoa(port)}, args...)...)
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
	})
	waitFor(t, out, func(s string) bool { return strings.Contains(s, "Server listening") })
	return port, out
}

// waitFor polls the server's output until ok accepts it (10 s at most).
func waitFor(t *testing.T, out *peertest.Buffer, ok func(string) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok(out.String()) {
		require.True(t, time.Now().Before(deadline), "server output: %s", out.String())
		time.Sleep(10 * time.Millisecond)
	}
}

// exchange plays a client up to the state after the parameters and returns
// that state byte, or closedNoState when the server closed without one.
func exchange(t *testing.T, port int, token string) int {
	t.Helper()
	conn, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), 5*time.Second)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
	cookie := make([]byte, cookieLen)
	for i := range cookieLen - 1 {
		cookie[i] = "abcdefghijklmnopqrstuvwxyz234567"[mrand.IntN(32)]
	}
	_, err = conn.Write(cookie)
	require.NoError(t, err)
	b := make([]byte, 1)
	_, err = io.ReadFull(conn, b)
	require.NoError(t, err)
	require.Equal(t, byte(stateParamExchange), b[0])
	p := map[string]any{"tcp": true, "omit": 0, "time": 1, "num": 0, "blockcount": 0, "parallel": 1, "len": 131072, "client_version": "3.21+"}
	if token != "" {
		p["authtoken"] = token
	}
	js, err := json.Marshal(p)
	require.NoError(t, err)
	require.NoError(t, binary.Write(conn, binary.BigEndian, uint32(len(js))))
	_, err = conn.Write(js)
	require.NoError(t, err)
	if _, err := io.ReadFull(conn, b); err != nil {
		return closedNoState
	}
	return int(int8(b[0]))
}
