// Package cachetest starts real redis-server or valkey-server instances on free
// loopback ports for tests and local tools: plain, TLS (with a throwaway CA and
// server certificate generated in Go), an ACL user with the default user
// disabled, and a cluster of 3 primaries, each with a replica when asked
// (the shape of a node-based ElastiCache cluster). It is to package cache what net/http/httptest
// is to net/http, except that the server is the real binary, not an imitation.
//
// Start is usable outside tests (examples/cacheprobe uses it when no -addr is
// given); NewServer wraps it for tests, skipping through internal/peertest when
// the binary is missing and cleaning up with t.Cleanup.
package cachetest

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/internal/peertest"
)

// installHint says how to get a server binary on Debian and Ubuntu
// (peertest.CacheInstallHint, for the tests that look for one themselves).
const installHint = peertest.CacheInstallHint

// ErrNoServer is returned (wrapped) by Start when neither valkey-server nor
// redis-server is on PATH.
var ErrNoServer = errors.New("cachetest: no valkey-server or redis-server on PATH")

// Config describes the server to start. A nil *Config means a plain standalone
// server without TLS or authentication.
type Config struct {
	// Binary is the server binary. Empty means $NETPERFKIT_CACHE_SERVER
	// when set, else valkey-server if it is on PATH, else redis-server. A
	// cluster is created with the matching CLI (valkey-cli or redis-cli:
	// beside the binary, else on PATH).
	Binary string
	// TLS serves TLS only (--port 0 --tls-port P) with a certificate for
	// 127.0.0.1, ::1 and localhost signed by a CA generated for this server.
	// Client certificates are not required.
	TLS bool
	// User, when non-empty, creates an ACL user with Password and all
	// permissions, and disables the default user so that every connection must
	// authenticate.
	User string
	// Password is User's password. Empty with a non-empty User means "pw".
	Password string
	// Cluster, when true, starts three cluster-enabled nodes and joins them with
	// `redis-cli --cluster create`, waiting for cluster_state:ok.
	Cluster bool
	// Replicas is the number of replicas per primary of a Cluster: 0 (the
	// default) or 1. With 1, three more nodes start and each replicates one
	// primary (Server.Addrs[3+i] replicates Server.Addrs[i]); Start returns
	// once every replica's link to its primary is up. Every node runs with
	// cluster-node-timeout 5000 ms unless ExtraArgs sets another (for
	// example "--cluster-node-timeout", "1000", for failovers within about
	// two seconds of a primary stopping).
	Replicas int
	// Dir is where the per-server temporary directory is created. Empty means
	// os.TempDir().
	Dir string
	// StartTimeout bounds start-up, including cluster creation. Zero means
	// 20 s; negative is an error.
	StartTimeout time.Duration
	// ExtraArgs are appended to every node's command line.
	ExtraArgs []string
}

// Server is a running server or cluster. Its fields are read-only. Close is safe
// for concurrent use and idempotent.
type Server struct {
	// Addr is the first (or only) node's address, "127.0.0.1:port".
	Addr string
	// Addrs holds every node's address; one element unless Config.Cluster:
	// the three primaries first, then their replicas in the same order.
	Addrs []string
	// CAFile is a PEM file of the CA that signed the server certificate
	// (TLS only), for command-line clients; removed by Close.
	CAFile string
	// Binary is the server binary that was started.
	Binary string

	// dir is the temporary directory holding configuration, logs and certificates.
	dir            string
	tls, cluster   bool
	caPEM          []byte
	user, password string

	mu     sync.Mutex
	nodes  []*node
	closed bool
}

type node struct {
	port int
	cmd  *exec.Cmd
	done chan struct{}
	err  error // exit status, valid after done is closed
	log  string
}

// lookPath returns the server binary Start uses by default and the matching
// CLI.
func lookPath() (server, cli string, err error) {
	if p, err := exec.LookPath("valkey-server"); err == nil {
		c, _ := exec.LookPath("valkey-cli")
		return p, c, nil
	}
	if p, err := exec.LookPath("redis-server"); err == nil {
		c, _ := exec.LookPath("redis-cli")
		return p, c, nil
	}
	return "", "", fmt.Errorf("%w (%s)", ErrNoServer, installHint)
}

// defaultStartTimeout bounds start-up when Config.StartTimeout is zero.
const defaultStartTimeout = 20 * time.Second

// Start starts the server described by cfg and waits until it answers (and, for
// a cluster, until cluster_state is ok). ctx bounds start-up only; the server
// runs until Close. On error nothing is left running.
//
// On linux the kernel kills the servers if the process dies without Close
// (a parent-death signal). That signal is tied to the thread that forked a
// server rather than to the process (Go issue 27505), and the Go runtime
// ends a thread when a goroutine locked to it (runtime.LockOSThread) returns
// still locked, so Start forks each server from a goroutine of its own that
// keeps its thread locked until the server exits: Start may be called from
// any goroutine, a locked one included.
func Start(ctx context.Context, cfg *Config) (*Server, error) {
	if ctx == nil {
		return nil, errors.New("cachetest: nil context")
	}
	if cfg == nil {
		cfg = &Config{}
	}
	if cfg.StartTimeout < 0 {
		return nil, fmt.Errorf("cachetest: Config.StartTimeout %v is negative", cfg.StartTimeout)
	}
	if cfg.Replicas < 0 || cfg.Replicas > 1 || (cfg.Replicas > 0 && !cfg.Cluster) {
		return nil, fmt.Errorf("cachetest: Config.Replicas %d: want 0, or 1 with Cluster", cfg.Replicas)
	}
	bin, cli, err := binaries(cfg)
	if err != nil {
		return nil, err
	}
	timeout := cfg.StartTimeout
	if timeout <= 0 {
		timeout = defaultStartTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	dir, err := os.MkdirTemp(cfg.Dir, "cachetest-")
	if err != nil {
		return nil, fmt.Errorf("cachetest: %w", err)
	}
	s := &Server{tls: cfg.TLS, cluster: cfg.Cluster, Binary: bin, dir: dir, user: cfg.User}
	if cfg.User != "" {
		s.password = cmp.Or(cfg.Password, "pw")
	}
	ok := false
	defer func() {
		if !ok {
			s.Close()
		}
	}()
	if err := s.start(ctx, cfg, cli); err != nil {
		return nil, err
	}
	ok = true
	return s, nil
}

// serverEnv names the server binary Start uses when Config.Binary is
// empty, before looking on PATH: set it to a valkey-server (for example
// ../shared/peers/build.sh's) to run a test suite against valkey, and leave
// it unset for the one on PATH.
const serverEnv = "NETPERFKIT_CACHE_SERVER"

// binaries returns the server binary and the CLI that creates a cluster.
func binaries(cfg *Config) (bin, cli string, err error) {
	bin = cfg.Binary
	if bin == "" {
		bin = os.Getenv(serverEnv)
	}
	if bin == "" {
		if bin, cli, err = lookPath(); err != nil {
			return "", "", err
		}
	} else {
		cli = cliFor(bin)
	}
	if cfg.Cluster && cli == "" {
		return "", "", errors.New("cachetest: a cluster needs redis-cli or valkey-cli on PATH (" + installHint + ")")
	}
	return bin, cli, nil
}

// cliFor finds the CLI that matches a server binary: beside it (a build's
// bin directory), else on PATH, else the other family's (valkey-cli and
// redis-cli both create clusters of either server).
func cliFor(bin string) string {
	name := strings.Replace(filepath.Base(bin), "-server", "-cli", 1)
	if p := filepath.Join(filepath.Dir(bin), name); name != filepath.Base(bin) {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p
		}
	}
	for _, n := range []string{name, "valkey-cli", "redis-cli"} {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	return ""
}

// start writes the certificates, starts the nodes and joins a cluster.
func (s *Server) start(ctx context.Context, cfg *Config, cli string) error {
	var certFile, keyFile string
	if cfg.TLS {
		var err error
		if certFile, keyFile, err = s.writePKI(); err != nil {
			return err
		}
	}
	n := 1
	if cfg.Cluster {
		n = clusterPrimaries * (1 + cfg.Replicas)
	}
	for i := range n {
		nd, err := s.startNode(ctx, cfg, i, certFile, keyFile)
		if err != nil {
			return err
		}
		s.Addrs = append(s.Addrs, "127.0.0.1:"+strconv.Itoa(nd.port))
	}
	s.Addr = s.Addrs[0]
	if !cfg.Cluster {
		return nil
	}
	if err := s.createCluster(ctx, cli); err != nil {
		return err
	}
	if cfg.Replicas > 0 {
		return s.addReplicas(ctx)
	}
	return nil
}

// writePKI generates the CA and the server certificate into s.dir.
func (s *Server) writePKI() (certFile, keyFile string, err error) {
	pki, err := newPKI()
	if err != nil {
		return "", "", err
	}
	s.caPEM = pki.caPEM
	s.CAFile = filepath.Join(s.dir, "ca.crt")
	certFile = filepath.Join(s.dir, "server.crt")
	keyFile = filepath.Join(s.dir, "server.key")
	for _, f := range []struct {
		name string
		data []byte
	}{{s.CAFile, pki.caPEM}, {certFile, pki.certPEM}, {keyFile, pki.keyPEM}} {
		if err := os.WriteFile(f.name, f.data, 0o600); err != nil {
			return "", "", fmt.Errorf("cachetest: %w", err)
		}
	}
	return certFile, keyFile, nil
}

// Endpoint returns a cache.Endpoint that reaches the server: its address,
// cluster mode, TLS trusting the server's throwaway CA, and the ACL
// credentials. Each call returns a new value the caller may change.
func (s *Server) Endpoint() *cache.Endpoint {
	return &cache.Endpoint{
		Addr:      s.Addr,
		Cluster:   s.cluster,
		TLS:       s.tls,
		CACertPEM: bytes.Clone(s.caPEM),
		User:      s.user,
		Password:  cache.Secret(s.password),
	}
}

// startNode starts node i on a free port, retrying with another port when the
// chosen one was taken in between (other processes bind ports too).
func (s *Server) startNode(ctx context.Context, cfg *Config, i int, certFile, keyFile string) (*node, error) {
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		port, err := freePort(cfg.Cluster)
		if err != nil {
			return nil, err
		}
		ndir := filepath.Join(s.dir, "node"+strconv.Itoa(i)+"-"+strconv.Itoa(port))
		if err := os.MkdirAll(ndir, 0o700); err != nil {
			return nil, fmt.Errorf("cachetest: %w", err)
		}
		args := []string{
			"--bind", "127.0.0.1", "--dir", ndir, "--save", "", "--appendonly", "no",
			"--daemonize", "no", "--logfile", filepath.Join(ndir, "server.log"),
			"--protected-mode", "no",
		}
		if cfg.TLS {
			args = append(args, "--port", "0", "--tls-port", strconv.Itoa(port),
				"--tls-cert-file", certFile, "--tls-key-file", keyFile,
				"--tls-ca-cert-file", s.CAFile, "--tls-auth-clients", "no")
			if cfg.Cluster {
				// A replica reaches its primary over TLS too.
				args = append(args, "--tls-cluster", "yes", "--tls-replication", "yes")
			}
		} else {
			args = append(args, "--port", strconv.Itoa(port))
		}
		if cfg.Cluster {
			args = append(args, "--cluster-enabled", "yes", "--cluster-config-file",
				"nodes-"+strconv.Itoa(port)+".conf", "--cluster-node-timeout", "5000")
		}
		if cfg.User != "" {
			args = append(args, "--user", cfg.User, "on", ">"+s.password, "~*", "&*", "+@all",
				"--user", "default", "off")
			if cfg.Replicas > 0 {
				// A replica authenticates to its primary as that user.
				args = append(args, "--masteruser", cfg.User, "--masterauth", s.password)
			}
		}
		args = append(args, cfg.ExtraArgs...)
		cmd := exec.Command(s.Binary, args...)
		cmd.Stdout, cmd.Stderr = nil, nil
		dieWithParent(cmd)
		nd := &node{port: port, cmd: cmd, done: make(chan struct{}), log: filepath.Join(ndir, "server.log")}
		if err := startAndWait(nd); err != nil {
			return nil, fmt.Errorf("cachetest: start %s: %w", s.Binary, err)
		}
		s.mu.Lock()
		s.nodes = append(s.nodes, nd)
		s.mu.Unlock()
		if err := s.waitReady(ctx, nd); err != nil {
			lastErr = err
			select {
			case <-nd.done: // exited by itself, most likely the port was taken: retry
				continue
			default:
				return nil, err
			}
		}
		return nd, nil
	}
	return nil, lastErr
}

// startAndWait starts nd's process and waits for it in a goroutine, which
// closes nd.done when it exits. The goroutine stays locked to the OS thread
// that forked the process until then: the parent-death signal of
// dieWithParent is tied to that thread, not to the process (Go issue
// 27505), and a thread exits when a goroutine locked to it returns without
// unlocking. Holding the thread keeps any other goroutine from locking it
// and taking the server down with it; it costs nothing, since waiting for
// the process blocks a thread in wait4 anyway.
func startAndWait(nd *node) error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := nd.cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		nd.err = nd.cmd.Wait()
		close(nd.done)
	}()
	return <-started
}

// waitReady polls until the node answers PING (NOAUTH counts as an answer).
func (s *Server) waitReady(ctx context.Context, nd *node) error {
	addr := "127.0.0.1:" + strconv.Itoa(nd.port)
	for {
		select {
		case <-nd.done:
			return fmt.Errorf("cachetest: %s on %s exited (%v): %s", filepath.Base(s.Binary), addr, nd.err, tail(nd.log))
		default:
		}
		if err := s.ping(ctx, addr); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cachetest: %s on %s not ready: %w: %s", filepath.Base(s.Binary), addr, ctx.Err(), tail(nd.log))
		case <-nd.done:
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// ping sends an inline PING and accepts +PONG or an error reply (NOAUTH when
// the default user is off), which both prove the server is serving.
func (s *Server) ping(ctx context.Context, addr string) error {
	d := net.Dialer{Timeout: time.Second}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if s.tls {
		tc := tls.Client(c, s.clientTLSConfig())
		if err := tc.HandshakeContext(ctx); err != nil {
			return err
		}
		c = tc
	}
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.HasPrefix(line, "+PONG") || strings.HasPrefix(line, "-NOAUTH") {
		return nil
	}
	return fmt.Errorf("cachetest: unexpected PING reply %q", strings.TrimSpace(line))
}

// clientTLSConfig returns a TLS configuration that trusts the server's CA, or
// nil for a plaintext server.
func (s *Server) clientTLSConfig() *tls.Config {
	if !s.tls {
		return nil
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(s.caPEM)
	return &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
}

// cliArgs returns redis-cli's connection options for this server.
func (s *Server) cliArgs() []string {
	var a []string
	if s.tls {
		a = append(a, "--tls", "--cacert", s.CAFile)
	}
	if s.user != "" {
		a = append(a, "--user", s.user, "--pass", s.password, "--no-auth-warning")
	}
	return a
}

func (s *Server) createCluster(ctx context.Context, cli string) error {
	args := append([]string{"--cluster", "create"}, s.Addrs[:clusterPrimaries]...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	args = append(args, s.cliArgs()...)
	out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("cachetest: %s --cluster create: %w: %s", filepath.Base(cli), err, lastLines(out, 5))
	}
	// Every node must agree before a client can rely on CLUSTER SLOTS.
	for _, addr := range s.Addrs[:clusterPrimaries] {
		host, port, _ := net.SplitHostPort(addr)
		for {
			a := append([]string{"-h", host, "-p", port}, s.cliArgs()...)
			a = append(a, "CLUSTER", "INFO")
			out, err := exec.CommandContext(ctx, cli, a...).CombinedOutput()
			if err == nil && bytes.Contains(out, []byte("cluster_state:ok")) {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("cachetest: cluster node %s not ok: %w: %s", addr, ctx.Err(), lastLines(out, 3))
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return nil
}

// Kill stops every node at once with SIGKILL and waits for them to exit,
// leaving the temporary directory in place; tests use it to make a server
// disappear mid-run. Close still has to be called.
func (s *Server) Kill() {
	s.mu.Lock()
	nodes := append([]*node(nil), s.nodes...)
	s.mu.Unlock()
	for _, nd := range nodes {
		_ = nd.cmd.Process.Kill()
	}
	for _, nd := range nodes {
		<-nd.done
	}
}

// Close kills every node, waits for it to exit and removes the temporary
// directory. It returns the error from removing the directory, if any.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.Kill()
	if s.dir == "" {
		return nil
	}
	if err := os.RemoveAll(s.dir); err != nil {
		return fmt.Errorf("cachetest: %w", err)
	}
	return nil
}

// freePort returns a loopback TCP port that is free now; with cluster it also
// makes sure that port+10000 (the cluster bus) is free. Another process can
// still take it before the server binds, which startNode handles by retrying.
func freePort(cluster bool) (int, error) {
	for i := 0; i < 50; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("cachetest: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		if !cluster {
			l.Close()
			return port, nil
		}
		if port+10000 > 65535 {
			l.Close()
			continue
		}
		bus, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port+10000))
		l.Close()
		if err != nil {
			continue
		}
		bus.Close()
		return port, nil
	}
	return 0, errors.New("cachetest: no free port pair for a cluster node")
}

func tail(file string) string {
	b, err := os.ReadFile(file)
	if err != nil {
		return "(no log)"
	}
	return lastLines(b, 5)
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
