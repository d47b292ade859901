// Package k8slab runs a real Kubernetes control plane on loopback for tests:
// etcd (Debian's etcd-server), kube-apiserver and, when a test asks,
// kube-controller-manager, with kubectl to drive them. There is no scheduler
// and no kubelet: pods stay Pending, and a test sets a pod's status by hand
// (PatchPodStatus) to play the kubelet's part.
//
// The Kubernetes binaries are built once, at the pinned Version, by
// scripts/k8s-peers.sh (make k8s-test) into
// ~/.cache/netperfkit-peers/k8s-v<Version>/bin, or where $NETPERFKIT_K8S_BIN
// says. The first build takes 15 minutes or more on 2 cores, so the tests
// here run only when $NETPERFKIT_K8S is set (make k8s-test sets it) and skip
// otherwise, which keeps make test quick for a newcomer. When they run and a
// binary is missing they skip, or fail with NETPERFKIT_REQUIRE_PEERS=1 (as CI
// sets it).
package k8slab

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/internal/peertest"
)

// Version is the Kubernetes release scripts/k8s-peers.sh builds and the tests
// run against.
const Version = "1.37.2"

// Environment variables: EnableEnv turns the control-plane tests on; BinEnv
// names the directory of the built binaries.
const (
	EnableEnv = "NETPERFKIT_K8S"
	BinEnv    = "NETPERFKIT_K8S_BIN"
)

// ServiceRange is the cluster's Service address range: inside RFC 2544's
// 198.18.0.0/15, and never routed (nothing here proxies Services).
const ServiceRange = "198.19.240.0/20"

// Bounds on the waits: the apiserver was ready in 4-12 s on a quiet machine;
// a loaded 2-core CI machine gets ten times that.
const (
	readyTimeout   = 3 * time.Minute
	kubectlTimeout = 2 * time.Minute
	stopGrace      = 5 * time.Second
)

// ControlPlane is a running etcd and kube-apiserver, torn down by the test's
// cleanup.
type ControlPlane struct {
	// Dir holds the control plane's files: keys, the token file, the
	// kubeconfig, etcd's data and the apiserver's serving certificate.
	Dir string
	// Kubeconfig is a kubeconfig for a user in system:masters.
	Kubeconfig string
	// Server is the apiserver's URL.
	Server string

	bin, kubectl, saKey, caFile string
}

// Enabled reports whether the control-plane tests were asked for.
func Enabled() bool {
	v := os.Getenv(EnableEnv)
	return v != "" && v != "0" && v != "false"
}

// Bin returns the directory that holds the Kubernetes binaries.
func Bin() string {
	if d := os.Getenv(BinEnv); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".cache", "netperfkit-peers", "k8s-v"+Version, "bin")
}

// Start starts etcd and kube-apiserver on free loopback ports and returns
// once the apiserver is ready. It skips tb unless Enabled, and skips or fails
// it (peertest.Missing) without etcd or the Kubernetes binaries.
func Start(tb testing.TB) *ControlPlane {
	tb.Helper()
	if !Enabled() {
		tb.Skipf("skipping: the Kubernetes control-plane tests run in `make k8s-test` (it builds Kubernetes v%s once, "+
			"15+ minutes on 2 cores, then caches it); set %s=1 to run them here", Version, EnableEnv)
		return nil
	}
	etcd := peertest.Binary(tb, "apt-get install etcd-server", "etcd")
	bin := Bin()
	for _, b := range []string{"kube-apiserver", "kube-controller-manager", "kubectl"} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			peertest.Missing(tb, fmt.Sprintf("%s v%s not built in %s", b, Version, bin), "make k8s-test, or scripts/k8s-peers.sh")
			return nil
		}
	}
	if etcd == "" {
		return nil
	}
	dir, err := os.MkdirTemp("", "npk-k8s-")
	if err != nil {
		tb.Fatalf("k8slab: %v", err)
	}
	tb.Cleanup(func() { _ = os.RemoveAll(dir) })
	c := &ControlPlane{Dir: dir, bin: bin, kubectl: filepath.Join(bin, "kubectl")}
	etcdURL := c.startEtcd(tb, etcd)
	token := c.writeCredentials(tb)
	port := peertest.FreePort(tb)
	c.Server = "https://127.0.0.1:" + strconv.Itoa(port)
	c.caFile = filepath.Join(dir, "certs", "apiserver.crt")
	c.start(tb, "kube-apiserver", filepath.Join(bin, "kube-apiserver"),
		"--etcd-servers="+etcdURL, "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(port), "--cert-dir="+filepath.Join(dir, "certs"),
		// A loopback address cannot be a Service endpoint: no reconciler.
		"--endpoint-reconciler-type=none",
		"--token-auth-file="+filepath.Join(dir, "tokens.csv"), "--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+c.saKey, "--service-account-signing-key-file="+c.saKey,
		"--service-cluster-ip-range="+ServiceRange, "--profiling=false")
	c.writeKubeconfig(tb, token)
	c.waitReady(tb)
	return c
}

// startEtcd starts etcd with its data under c.Dir and returns its client URL.
func (c *ControlPlane) startEtcd(tb testing.TB, etcd string) string {
	tb.Helper()
	client := "http://127.0.0.1:" + strconv.Itoa(peertest.FreePort(tb))
	peer := "http://127.0.0.1:" + strconv.Itoa(peertest.FreePort(tb))
	c.start(tb, "etcd", etcd, "--name=npk", "--data-dir="+filepath.Join(c.Dir, "etcd"),
		"--listen-client-urls="+client, "--advertise-client-urls="+client,
		"--listen-peer-urls="+peer, "--initial-advertise-peer-urls="+peer,
		"--initial-cluster=npk="+peer, "--logger=zap", "--log-level=warn")
	return client
}

// writeCredentials writes the service-account key and a token file whose one
// token is in system:masters, and returns the token.
func (c *ControlPlane) writeCredentials(tb testing.TB) string {
	tb.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		tb.Fatalf("k8slab: %v", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		tb.Fatalf("k8slab: %v", err)
	}
	c.saKey = filepath.Join(c.Dir, "sa.key")
	writeFile(tb, c.saKey, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	var b [16]byte
	_, _ = rand.Read(b[:])
	token := hex.EncodeToString(b[:])
	writeFile(tb, filepath.Join(c.Dir, "tokens.csv"), []byte(token+",npk-admin,npk-admin,system:masters\n"))
	return token
}

func (c *ControlPlane) writeKubeconfig(tb testing.TB, token string) {
	tb.Helper()
	c.Kubeconfig = filepath.Join(c.Dir, "kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: npk
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: npk-admin
  user:
    token: %s
contexts:
- name: npk
  context: {cluster: npk, user: npk-admin}
current-context: npk
`, c.Server, c.caFile, token)
	writeFile(tb, c.Kubeconfig, []byte(cfg))
}

// waitReady polls /readyz until the apiserver answers ok.
func (c *ControlPlane) waitReady(tb testing.TB) {
	tb.Helper()
	start := time.Now()
	var last string
	for time.Since(start) < readyTimeout {
		if _, err := os.Stat(c.caFile); err == nil {
			out, err := c.Kubectl(context.Background(), nil, "get", "--raw=/readyz", "--request-timeout=5s")
			if err == nil && strings.TrimSpace(out) == "ok" {
				tb.Logf("k8slab: kube-apiserver v%s ready after %v", Version, time.Since(start).Round(100*time.Millisecond))
				return
			}
			last = fmt.Sprintf("%v: %s", err, out)
		}
		time.Sleep(250 * time.Millisecond)
	}
	tb.Fatalf("k8slab: kube-apiserver not ready after %v: %s", readyTimeout, last)
}

// StartControllerManager starts kube-controller-manager against c, without
// the node lifecycle controller (Nodes with no kubelet would be tainted
// not-ready, and what a DaemonSet makes of them would depend on the time),
// with an API rate that lets it make a thousand pods in seconds.
func (c *ControlPlane) StartControllerManager(tb testing.TB) {
	tb.Helper()
	c.start(tb, "kube-controller-manager", filepath.Join(c.bin, "kube-controller-manager"),
		"--kubeconfig="+c.Kubeconfig, "--controllers=*,-nodelifecycle", "--leader-elect=false",
		"--secure-port=0", "--service-account-private-key-file="+c.saKey, "--root-ca-file="+c.caFile,
		"--service-cluster-ip-range="+ServiceRange, "--kube-api-qps=500", "--kube-api-burst=1000",
		"--concurrent-daemonset-syncs=4")
}

// Kubectl runs kubectl against c with args, stdin (nil for none) on its
// input, bounded in time, and returns its standard output; the error carries
// its standard error.
func (c *ControlPlane) Kubectl(ctx context.Context, stdin io.Reader, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, kubectlTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.kubectl, append([]string{"--kubeconfig=" + c.Kubeconfig}, args...)...)
	cmd.Stdin = stdin
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("k8slab: kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}

// start runs a control-plane process until the test ends: then SIGTERM, and
// SIGKILL after stopGrace. Its output is logged when the test failed.
func (c *ControlPlane) start(tb testing.TB, name, bin string, args ...string) {
	tb.Helper()
	cmd := exec.Command(bin, args...)
	var out peertest.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		tb.Fatalf("k8slab: %s: %v", name, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	tb.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(stopGrace):
			_ = cmd.Process.Kill()
			<-exited
		}
		if tb.Failed() {
			tb.Logf("k8slab: %s output (last 8 KiB):\n%s", name, tail(out.String(), 8<<10))
		}
	})
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

func writeFile(tb testing.TB, name string, b []byte) {
	tb.Helper()
	if err := os.WriteFile(name, b, 0o600); err != nil {
		tb.Fatalf("k8slab: %v", err)
	}
}

// PatchPodStatus plays the kubelet's part for one pod: it sets the pod's
// phase to Failed with container's state terminated by exitCode.
func (c *ControlPlane) PatchPodStatus(ctx context.Context, ns, pod, container string, exitCode int) error {
	patch := fmt.Sprintf(`{"status":{"phase":"Failed","containerStatuses":[{"name":%q,"image":"","imageID":"",`+
		`"ready":false,"restartCount":0,"started":false,"state":{"terminated":{"exitCode":%d,"reason":"Error"}}}]}}`,
		container, exitCode)
	_, err := c.Kubectl(ctx, nil, "-n", ns, "patch", "pod", pod, "--subresource=status", "--type=merge", "-p", patch)
	return err
}

// ErrTimeout is what Until returns when its condition never held.
var ErrTimeout = errors.New("k8slab: condition not met in time")

// Until calls cond every interval until it reports true or fails, for at most
// timeout; the last error cond returned, or ErrTimeout, comes back.
func Until(timeout, interval time.Duration, cond func() (bool, error)) error {
	end := time.Now().Add(timeout)
	var last error
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		last = err
		if time.Now().After(end) {
			if last != nil {
				return fmt.Errorf("%w: %w", ErrTimeout, last)
			}
			return ErrTimeout
		}
		time.Sleep(interval)
	}
}
