package main

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/latency"
	"github.com/netperfkit/netperfkit/throughput"
)

// accessServers starts both servers with cfg's access settings on loopback
// and returns their addresses.
func accessServers(t *testing.T, cfg config) (iperf, sockperf string) {
	t.Helper()
	ac, err := newAccessControl(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan error, 2)
	go func() { done <- serveIperf3(ctx, ln, serverLimits{maxTests: 2, maxConns: 4}, ac) }()
	a, serve, err := listenSockperf(ctx, "udp", "127.0.0.1:0", serverLimits{maxTests: 2, maxConns: 4}, ac)
	require.NoError(t, err)
	go func() { done <- serve() }()
	t.Cleanup(func() {
		cancel()
		<-done
		<-done
	})
	return ln.Addr().String(), a.String()
}

func TestAccessControlAllowList(t *testing.T) {
	ctx := context.Background()
	iperf, sock := accessServers(t, config{AllowClients: []string{"10.0.0.0/8", "192.0.2.1"}})
	_, err := tputProbe(ctx, iperf, 1<<20, time.Second, 5*time.Second, nil)
	require.ErrorIs(t, err, errPeerBusy, "refused as iperf3 refuses: access denied")
	rtt, _ := rttProbe(ctx, sock, 2, 200*time.Millisecond)
	assert.Empty(t, rtt.samples, "sockperf datagrams from outside the allow-list are dropped")
	assert.Equal(t, int64(2), rtt.lost)

	iperf, sock = accessServers(t, config{AllowClients: []string{"127.0.0.0/8"}, MaxTestsPerClient: 1})
	r, err := tputProbe(ctx, iperf, 1<<20, time.Second, 5*time.Second, nil)
	require.NoError(t, err)
	assert.Positive(t, r.sentBytes)
	rtt, err = rttProbe(ctx, sock, 2, time.Second)
	require.NoError(t, err)
	assert.Len(t, rtt.samples, 2)

	_, err = newAccessControl(config{AllowClients: []string{"not-a-net"}})
	assert.Error(t, err)
}

func TestAccessControlAuth(t *testing.T) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	dir := t.TempDir()
	spki, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	require.NoError(t, err)
	pub, priv, users := filepath.Join(dir, "pub.pem"), filepath.Join(dir, "priv.pem"), filepath.Join(dir, "users")
	require.NoError(t, os.WriteFile(pub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: spki}), 0o600))
	require.NoError(t, os.WriteFile(priv, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}), 0o600))
	sum := sha256.Sum256([]byte("{agent}s3cret"))
	require.NoError(t, os.WriteFile(users, []byte("agent,"+hex.EncodeToString(sum[:])+"\n"), 0o600))

	iperf, _ := accessServers(t, config{IperfKey: priv, IperfUsers: users})
	ctx := context.Background()
	_, err = tputProbe(ctx, iperf, 1<<20, time.Second, 5*time.Second, nil)
	require.ErrorIs(t, err, throughput.ErrAuthFailed)
	t.Setenv("NETPERFKIT_IPERF3_PASSWORD", "s3cret")
	auth, err := probeAuth(config{IperfUser: "agent", IperfPublicKey: pub})
	require.NoError(t, err)
	r, err := tputProbe(ctx, iperf, 1<<20, time.Second, 5*time.Second, auth)
	require.NoError(t, err)
	assert.Positive(t, r.sentBytes)

	_, err = newAccessControl(config{IperfKey: filepath.Join(dir, "none"), IperfUsers: users})
	assert.Error(t, err)
	c := defaults()
	c.IperfKey = priv
	assert.Error(t, c.validate(), "the key needs a users file")
}

// FuzzAccessControl feeds arbitrary -allow-clients lists and client
// addresses to the parser: whatever it accepts, both servers take, and a
// listed address is served.
func FuzzAccessControl(f *testing.F) {
	f.Add("10.0.0.0/8", "10.1.2.3")
	f.Add("::1,192.0.2.1", "::ffff:192.0.2.1")
	f.Add("::ffff:10.0.0.0/104", "fe80::1%eth0")
	f.Add("bad", "x")
	f.Fuzz(func(t *testing.T, list, addr string) {
		ac, err := newAccessControl(config{AllowClients: splitList(list)})
		if err != nil {
			return
		}
		for _, p := range ac.allowed {
			if !p.IsValid() || p != p.Masked() || p.Addr().Is4In6() && p.Bits() >= 96 {
				t.Fatalf("%q gave prefix %v", list, p)
			}
		}
		if _, err := latency.NewServer(&latency.ServerConfig{AllowedClients: ac.allowed}); err != nil {
			t.Fatalf("%q: the sockperf server refuses the list: %v", list, err)
		}
		ip, err := netip.ParseAddr(addr)
		if err != nil {
			return
		}
		ac, err = newAccessControl(config{AllowClients: []string{addr}})
		if err != nil || len(ac.allowed) != 1 || !ac.allowed[0].Contains(ip.Unmap().WithZone("")) {
			t.Fatalf("-allow-clients %q does not admit %v: %v %v", addr, ip, ac.allowed, err)
		}
	})
}

// TestIperf3BitrateLimit: -iperf3-bitrate-limit (iperf3_bitrate_limit)
// reaches the iperf3 server, which refuses a test that asks for more and
// serves one within it.
func TestIperf3BitrateLimit(t *testing.T) {
	cfg, err := parseConfig([]string{"-iperf3-bitrate-limit", "10e6"}, io.Discard)
	require.NoError(t, err)
	ac, err := newAccessControl(cfg)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	done := make(chan error, 1)
	go func() { done <- serveIperf3(ctx, ln, cfg.serverLimits(), ac) }()
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-done)
	})
	_, err = throughput.Run(ctx, ln.Addr().String(), &throughput.Config{Duration: time.Second, Bitrate: 4e6, Streams: 3})
	require.ErrorIs(t, err, throughput.ErrTotalRate)
	_, err = throughput.Run(ctx, ln.Addr().String(), &throughput.Config{Duration: time.Second, Bitrate: 4e6, Streams: 2, BlockLen: 16 << 10})
	require.NoError(t, err)

	file := filepath.Join(t.TempDir(), "agent.json")
	require.NoError(t, os.WriteFile(file, []byte(`{"iperf3_bitrate_limit": 1e9}`), 0o600))
	cfg, err = parseConfig([]string{"-config", file}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 1e9, cfg.serverLimits().maxRate)
	_, err = parseConfig([]string{"-iperf3-bitrate-limit", "-1"}, io.Discard)
	assert.Error(t, err)
}
