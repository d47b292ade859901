package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/cache/cachetest"
	"github.com/netperfkit/netperfkit/internal/peertest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// deniedEndpoint starts a real redis-server (or valkey-server) that fails
// every command of a client that does not authenticate, and returns the
// address to give the report, the reply every command gets ("DENIED" or
// "NOAUTH") and how it was set up.
//
// First choice, the case: --protected-mode yes with no password,
// reached through a loopback forwarder that connects from 127.0.0.2.
// redis-server before 7.2 counts only 127.0.0.1 and ::1 as local and so
// answers DENIED to every command; 7.2 and later (and valkey) count all of
// 127/8, and then the server is started with a password-protected ACL user
// and the default user off, so that every command of a client without
// credentials gets NOAUTH.
func deniedEndpoint(t *testing.T) (addr, reply, how string) {
	t.Helper()
	bin := peertest.Binary(t, peertest.CacheInstallHint, "redis-server", "valkey-server")
	protected := cachetest.NewServer(t, &cachetest.Config{Binary: bin, ExtraArgs: []string{"--protected-mode", "yes"}})
	if fwd, err := forwardFrom(t, "127.0.0.2", protected.Addr); err == nil {
		if line := firstReply(t, fwd); strings.HasPrefix(line, "-DENIED") {
			return fwd, "DENIED", bin + " --protected-mode yes, no password, its client at 127.0.0.2 through a loopback forwarder: " + line
		} else {
			t.Logf("%s does not deny 127.0.0.2 (PING: %q)", bin, line)
		}
	} else {
		t.Logf("no forwarder from 127.0.0.2: %v", err)
	}
	acl := cachetest.NewServer(t, &cachetest.Config{Binary: bin, User: "bench", Password: "denied-pw"})
	line := firstReply(t, acl.Addr)
	require.True(t, strings.HasPrefix(line, "-NOAUTH"), "PING without credentials: %q", line)
	return acl.Addr, "NOAUTH", bin + " with an ACL user and the default user off, the client without credentials: " + line
}

// firstReply sends PING to addr and returns the reply's first line.
func firstReply(t *testing.T, addr string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(5*time.Second)))
	_, err = c.Write([]byte("PING\r\n"))
	require.NoError(t, err)
	line, err := bufio.NewReader(c).ReadString('\n')
	require.NoError(t, err)
	return strings.TrimSpace(line)
}

// forwardFrom listens on a free loopback port and forwards each connection
// to target from the local address src, until the test ends.
func forwardFrom(t *testing.T, src, target string) (string, error) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	probe, err := d.Dial("tcp", target)
	if err != nil {
		return "", err
	}
	probe.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	open := map[net.Conn]bool{}
	track := func(c net.Conn, add bool) bool {
		mu.Lock()
		defer mu.Unlock()
		if add && open == nil {
			return false
		}
		if add {
			open[c] = true
		} else {
			delete(open, c)
		}
		return true
	}
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for c := range open {
			c.Close()
		}
		open = nil
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := d.Dial("tcp", target)
			if err != nil || !track(c, true) || !track(u, true) {
				c.Close()
				if u != nil {
					u.Close()
				}
				continue
			}
			pipe := func(dst, src net.Conn) {
				_, _ = io.Copy(dst, src)
				dst.Close()
				src.Close()
				track(dst, false)
				track(src, false)
			}
			wg.Go(func() { pipe(u, c) })
			wg.Go(func() { pipe(c, u) })
		}
	})
	return ln.Addr().String(), nil
}

// TestReportDeniedEndpoint runs E3 end to end against a real server that
// fails every command (DENIED from protected mode, or NOAUTH; the log says
// which) beside a healthy one: the failed endpoint's rows show FAILED and
// the first error in place of latencies in every output, and no ratio or U
// test uses them, each ratio row saying why.
func TestReportDeniedEndpoint(t *testing.T) {
	okSrv := cachetest.NewServer(t, &cachetest.Config{Binary: peertest.Binary(t, peertest.CacheInstallHint, "redis-server", "valkey-server")})
	denied, reply, how := deniedEndpoint(t)
	t.Logf("every command fails: %s", how)

	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"-skip", "paths,matrix", "-imds", "off", "-progress", "off",
		"-cache", "OK=" + okSrv.Addr + ",DENIED=" + denied, "-engines", "resp",
		"-cache-d", "300ms", "-runs", "2", "-probes", "5", "-workers", "2", "-out", out}, &stdout, &stderr)
	require.Equal(t, 0, code, "a failed endpoint fails nothing else; stderr: %s", stderr.String())

	b, err := os.ReadFile(filepath.Join(out, "report.json"))
	require.NoError(t, err)
	var rep Report
	require.NoError(t, json.Unmarshal(b, &rep))
	require.NotNil(t, rep.Cache)
	require.Len(t, rep.Cache.Endpoints, 2)
	okEp, deniedEp := rep.Cache.Endpoints[0], rep.Cache.Endpoints[1]
	require.Len(t, okEp.Workloads, 1)
	require.Len(t, deniedEp.Workloads, 1)

	ok := okEp.Workloads[0]
	require.NotNil(t, ok.Pool)
	require.NotNil(t, ok.Connect)
	assert.Nil(t, ok.PoolFailure)
	assert.Nil(t, ok.ConnectFailure)
	assert.Positive(t, ok.Pool.OpsPerSec.Median, "the healthy endpoint ran")

	w := deniedEp.Workloads[0]
	assert.Empty(t, w.Error, "the endpoint answered: its failure is the row's, not an error that stopped it")
	for mode, f := range map[string]*ModeFailure{"pool": w.PoolFailure, "connect": w.ConnectFailure} {
		require.NotNil(t, f, mode)
		assert.True(t, f.Failed, mode)
		assert.Positive(t, f.Attempts, mode)
		assert.Equal(t, f.Attempts, f.Errors, "%s: every attempt failed", mode)
		assert.Contains(t, f.FirstError, reply, mode)
	}
	require.NotNil(t, w.Pool, "report.json keeps the old keys of a failed mode")
	assert.Positive(t, w.Pool.Errors)
	assert.Contains(t, deniedEp.ProbeError, reply, "the probe fails too")

	var missing int
	for _, c := range rep.Cache.Comparisons {
		if !strings.Contains(c.Base+c.Other, "DENIED") {
			assert.Empty(t, c.Missing, "%s / %s", c.Base, c.Other)
			continue
		}
		missing++
		assert.Regexp(t, `DENIED resp (pool|connect) failed: \d+ of \d+ attempts failed \(100%\)`, c.Missing, "%s / %s", c.Base, c.Other)
		assert.Zero(t, c.P50Ratio)
		assert.Zero(t, c.OpsPerSecRatio)
		assert.Nil(t, c.P50Test)
		assert.Nil(t, c.OpsTest)
	}
	assert.Equal(t, 3, missing, "DENIED's connect/pool row and both endpoint rows say why they have no ratio")

	text := stdout.String()
	assert.Regexp(t, `\n\s+DENIED\s+resp\s+\d+\s+FAILED\s+-\s+-\s+FAILED\s+-\s+-\s+\d+\s`, text)
	assert.Regexp(t, `DENIED resp pool: FAILED: (\d+) of (\d+) attempts failed \(100%\); first error: .*`+reply, text)
	assert.Contains(t, text, "no ratio for OK resp pool vs DENIED resp pool: DENIED resp pool failed: ")
	for _, f := range []string{"report.md", "report.html"} {
		doc, err := os.ReadFile(filepath.Join(out, f))
		require.NoError(t, err)
		assert.Contains(t, string(doc), "DENIED resp pool: FAILED: ", f)
		assert.Contains(t, string(doc), "no ratio for OK resp pool vs DENIED resp pool", f)
		assert.Contains(t, string(doc), reply, f)
	}
}
