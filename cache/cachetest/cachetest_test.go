package cachetest_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/cache/cachetest"
)

// inline sends inline commands on one connection and returns the first line of
// each reply.
func inline(t *testing.T, s *cachetest.Server, addr string, tlsCfg *tls.Config, cmds ...string) []string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(5*time.Second)))
	if tlsCfg != nil {
		tc := tls.Client(c, tlsCfg)
		require.NoError(t, tc.Handshake())
		c = tc
	}
	br := bufio.NewReader(c)
	var out []string
	for _, cmd := range cmds {
		_, err := c.Write([]byte(cmd + "\r\n"))
		require.NoError(t, err)
		line, err := br.ReadString('\n')
		require.NoError(t, err)
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "$") && line != "$-1" {
			body, err := br.ReadString('\n')
			require.NoError(t, err)
			line = strings.TrimSpace(body)
		}
		out = append(out, line)
	}
	return out
}

func TestPlain(t *testing.T) {
	s := cachetest.NewServer(t, nil)
	require.Len(t, s.Addrs, 1)
	require.Nil(t, cachetest.ClientTLSConfig(s))
	require.Equal(t, []string{"+PONG", "+OK", "v"}, inline(t, s, s.Addr, nil, "PING", "SET k v", "GET k"))
}

func TestTLSWithACLUser(t *testing.T) {
	s := cachetest.NewServer(t, &cachetest.Config{TLS: true, User: "bench", Password: "secret"})
	require.NotEmpty(t, s.Endpoint().CACertPEM)
	require.FileExists(t, s.CAFile)
	got := inline(t, s, s.Addr, cachetest.ClientTLSConfig(s), "PING", "AUTH default x", "AUTH bench wrong", "AUTH bench secret", "PING")
	require.True(t, strings.HasPrefix(got[0], "-NOAUTH"), got[0])
	require.True(t, strings.HasPrefix(got[1], "-WRONGPASS"), got[1])
	require.True(t, strings.HasPrefix(got[2], "-WRONGPASS"), got[2])
	require.Equal(t, []string{"+OK", "+PONG"}, got[3:])

	// Without the CA the certificate must not verify: the server really is
	// using the throwaway CA's certificate.
	c, err := net.DialTimeout("tcp", s.Addr, 2*time.Second)
	require.NoError(t, err)
	defer c.Close()
	err = tls.Client(c, &tls.Config{ServerName: "127.0.0.1"}).Handshake()
	var verr *tls.CertificateVerificationError
	require.ErrorAs(t, err, &verr)
}

func TestCluster(t *testing.T) {
	s := cachetest.NewServer(t, &cachetest.Config{Cluster: true})
	require.Len(t, s.Addrs, 3)
	for _, a := range s.Addrs {
		got := inline(t, s, a, nil, "CLUSTER INFO")
		require.Contains(t, got[0], "cluster_state:ok")
	}
}

func TestCloseStopsServer(t *testing.T) {
	s := cachetest.NewServer(t, nil)
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "Close is idempotent")
	_, err := net.DialTimeout("tcp", s.Addr, time.Second)
	require.Error(t, err)
	require.NoDirExists(t, cachetest.ServerDir(s))
}

// commandsProcessed reads the server's total_commands_processed.
func commandsProcessed(t testing.TB, addr string) int64 {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(5*time.Second)))
	_, err = c.Write([]byte("INFO stats\r\n"))
	require.NoError(t, err)
	br := bufio.NewReader(c)
	for {
		line, err := br.ReadString('\n')
		require.NoError(t, err)
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "total_commands_processed:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			require.NoError(t, err)
			return n
		}
	}
}

// One b.N iteration of Benchmark is one request: the server sees exactly
// b.N commands per call (plus the INFO that counts them), and the metrics
// are benchstat's base units.
func TestBenchmarkIterationIsOneRequest(t *testing.T) {
	s := cachetest.NewServer(t, nil)
	type call struct{ n, commands int64 }
	var calls []call
	res := testing.Benchmark(func(b *testing.B) {
		before := commandsProcessed(b, s.Addr)
		cachetest.Benchmark(b, s.Endpoint(), &cache.WorkloadConfig{Workers: 2, KeySpace: 10, Duration: 10 * time.Second})
		calls = append(calls, call{int64(b.N), commandsProcessed(b, s.Addr) - before - 1})
	})
	require.NotEmpty(t, calls)
	for _, c := range calls {
		require.Equal(t, c.n, c.commands, "b.N = %d", c.n)
	}
	for _, m := range []string{"p50-ns", "p99-ns", "ops/s"} {
		require.Positive(t, res.Extra[m], m)
	}
	require.LessOrEqual(t, res.Extra["p50-ns"], res.Extra["p99-ns"])
}

// The metric set reads right in benchstat: base units only, errors/op in
// every run, zero included (issue 39: benchstat drops a metric's samples
// from the runs that lack it), ns/op left out
// of the line, and one throughput figure, the run's own rate: its
// successes over its window, which lies inside the timed span, so at
// least b.N over the benchmark's time.
func TestBenchmarkMetrics(t *testing.T) {
	s := cachetest.NewServer(t, nil)
	res := testing.Benchmark(func(b *testing.B) {
		cachetest.Benchmark(b, s.Endpoint(), &cache.WorkloadConfig{Workers: 2, KeySpace: 10, Duration: 10 * time.Second})
	})
	require.Positive(t, res.N)
	keys := make([]string, 0, len(res.Extra))
	for k := range res.Extra {
		keys = append(keys, k)
	}
	assert.ElementsMatch(t, []string{"ns/op", "p50-ns", "p99-ns", "ops/s", "errors/op"}, keys)
	assert.Zero(t, res.Extra["ns/op"])
	line := res.String()
	assert.NotContains(t, line, "ns/op", "ns/op 0 is left out of the line: %s", line)
	assert.Contains(t, line, "errors/op")
	assert.Equal(t, 1, strings.Count(line, "/s"), "one throughput figure: %s", line)
	assert.Zero(t, res.Bytes, "no SetBytes: no MB/s beside ops/s")
	assert.GreaterOrEqual(t, res.Extra["ops/s"]*res.T.Seconds(), float64(res.N)*0.999,
		"ops/s is the run's successes over a window inside the timed span")
}

// halfDenied serves RESP on loopback: of the commands it receives, the
// first, third, fifth... succeed (+OK) and the others are answered DENIED.
func halfDenied(t *testing.T) *cache.Endpoint {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var (
		wg sync.WaitGroup
		n  atomic.Int64
	)
	t.Cleanup(func() { l.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				stop := context.AfterFunc(t.Context(), func() { c.Close() })
				defer stop()
				br := bufio.NewReader(c)
				for {
					if _, err := readCommand(br); err != nil {
						return
					}
					reply := "-DENIED protected mode\r\n"
					if n.Add(1)%2 == 1 {
						reply = "+OK\r\n"
					}
					if _, err := c.Write([]byte(reply)); err != nil {
						return
					}
				}
			})
		}
	})
	return &cache.Endpoint{Addr: l.Addr().String()}
}

// readCommand reads one RESP array of bulk strings.
func readCommand(br *bufio.Reader) ([]string, error) {
	line, err := br.ReadString('\n')
	if err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "*")))
	if err != nil || n < 1 {
		return nil, fmt.Errorf("bad array header %q", line)
	}
	args := make([]string, n)
	for i := range args {
		if _, err := br.ReadString('\n'); err != nil { // $len
			return nil, err
		}
		arg, err := br.ReadString('\n')
		if err != nil {
			return nil, err
		}
		args[i] = strings.TrimSuffix(arg, "\r\n")
	}
	return args, nil
}

// When some requests fail, errors/op says how many per request.
func TestBenchmarkReportsErrors(t *testing.T) {
	ep := halfDenied(t)
	res := testing.Benchmark(func(b *testing.B) {
		cachetest.Benchmark(b, ep, &cache.WorkloadConfig{Workers: 2, KeySpace: 10, Duration: 10 * time.Second})
	})
	require.Positive(t, res.N)
	e := res.Extra["errors/op"]
	assert.InDelta(t, 0.5, e, 0.5/float64(res.N)+1e-9, "every other request failed")
	assert.Contains(t, res.String(), "errors/op")
}

// A cluster with replicas has the field's shape: three primaries, each
// with one replica of its own, and a paused primary's replica takes over
// with CLUSTER FAILOVER FORCE.
func TestClusterReplicasFailover(t *testing.T) {
	for _, tlsOn := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "tls+acl"}[tlsOn], func(t *testing.T) {
			cfg := &cachetest.Config{Cluster: true, Replicas: 1, TLS: tlsOn,
				StartTimeout: time.Minute, ExtraArgs: []string{"--cluster-node-timeout", "1000"}}
			if tlsOn {
				cfg.User, cfg.Password = "bench", "secret" // replicas authenticate to their primaries
			}
			s := cachetest.NewServer(t, cfg)
			require.Len(t, s.Addrs, 6)
			ctx := context.Background()
			for i, r := range s.Addrs[3:] {
				id, err := s.Do(ctx, s.Addrs[i], "CLUSTER", "MYID")
				require.NoError(t, err)
				info, err := s.Do(ctx, r, "INFO", "REPLICATION")
				require.NoError(t, err)
				require.Contains(t, info, "role:slave")
				_, port, _ := net.SplitHostPort(s.Addrs[i])
				require.Contains(t, info, "master_port:"+port, "replica %d follows primary %d", i, i)
				nodes, err := s.Do(ctx, r, "CLUSTER", "NODES")
				require.NoError(t, err)
				require.Contains(t, nodes, "slave "+id)
			}
			resume, err := s.Pause(s.Addrs[1])
			require.NoError(t, err)
			defer func() { require.NoError(t, resume()) }()
			short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			_, err = s.Do(short, s.Addrs[1], "PING")
			cancel()
			require.Error(t, err, "a paused node does not answer")
			// With a 1 s node timeout the replica may have promoted itself
			// already (on a loaded machine the lines above can take that
			// long): then it says FAILOVER is for replicas.
			_, err = s.Do(ctx, s.Addrs[4], "CLUSTER", "FAILOVER", "FORCE")
			if err != nil {
				require.ErrorContains(t, err, "send CLUSTER FAILOVER to a replica")
				info, ierr := s.Do(ctx, s.Addrs[4], "INFO", "REPLICATION")
				require.NoError(t, ierr)
				require.Contains(t, info, "role:master", "refused FAILOVER, yet not a primary")
			}
			require.Eventually(t, func() bool {
				info, err := s.Do(ctx, s.Addrs[4], "INFO", "REPLICATION")
				return err == nil && strings.Contains(info, "role:master")
			}, 20*time.Second, 20*time.Millisecond)
			require.NoError(t, resume())
			require.NoError(t, resume(), "resume is idempotent")
		})
	}
}

func TestReplicasNeedCluster(t *testing.T) {
	for _, c := range []cachetest.Config{{Replicas: 1}, {Cluster: true, Replicas: 2}, {Cluster: true, Replicas: -1}} {
		_, err := cachetest.Start(context.Background(), &c)
		require.ErrorContains(t, err, "Replicas")
	}
}
