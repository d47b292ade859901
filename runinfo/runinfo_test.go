package runinfo_test

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/internal/peertest"
	"github.com/netperfkit/netperfkit/runinfo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mockEnv names a built amazon-ec2-metadata-mock binary.
const mockEnv = "NETPERFKIT_EC2_METADATA_MOCK"

const mockHint = "go install github.com/aws/amazon-ec2-metadata-mock/cmd/ec2-metadata-mock@v1.13.0 " +
	"(GOBIN=~/.cache/netperfkit-peers/ec2-metadata-mock/bin), or set " + mockEnv

// metadataMock finds AWS's IMDS emulator: $NETPERFKIT_EC2_METADATA_MOCK,
// ~/.cache/netperfkit-peers/ec2-metadata-mock/bin/ec2-metadata-mock, or
// ec2-metadata-mock on PATH.
func metadataMock(t *testing.T) string {
	t.Helper()
	if p := os.Getenv(mockEnv); p != "" {
		return p
	}
	if home, err := os.UserHomeDir(); err == nil {
		p := filepath.Join(home, ".cache", "netperfkit-peers", "ec2-metadata-mock", "bin", "ec2-metadata-mock")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return peertest.Binary(t, mockHint, "ec2-metadata-mock")
}

// startMock runs the emulator on a free loopback port in IMDSv2-only mode
// and returns its base URL once it answers.
func startMock(t *testing.T) string {
	bin := metadataMock(t)
	port := peertest.FreePort(t)
	var out peertest.Buffer
	cmd := exec.Command(bin, "-n", "127.0.0.1", "-p", strconv.Itoa(port), "--imdsv2")
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Dir = t.TempDir()
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(base + "/latest/meta-data/instance-id")
		if err == nil {
			resp.Body.Close()
			// IMDSv2 only: a request without a token is refused.
			require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
			return base
		}
		require.True(t, time.Now().Before(deadline), "the metadata mock did not start: %s", out.String())
		time.Sleep(50 * time.Millisecond)
	}
}

func TestCollectOnEC2(t *testing.T) {
	base := startMock(t)
	// A long timeout: the emulator's speed on a loaded machine is not what
	// is tested.
	m := runinfo.Collect(context.Background(), &runinfo.Config{
		IMDSEndpoint: base, Settings: map[string]string{"d": "2s"}, Interface: "lo", IMDSTimeout: 30 * time.Second,
	})
	require.NotNil(t, m.EC2, m.EC2Note)
	assert.Empty(t, m.EC2Note)
	// The emulator's defaults (pkg/config/defaults/aemm-metadata-default-values.json).
	assert.Equal(t, runinfo.EC2{InstanceType: "m4.xlarge", AvailabilityZone: "us-east-1f", InstanceID: "i-1234567890abcdef0", Region: "us-east-1"}, *m.EC2)

	var b bytes.Buffer
	require.NoError(t, m.WriteText(&b))
	assert.Contains(t, b.String(), "m4.xlarge in us-east-1f (us-east-1), i-1234567890abcdef0")
	assert.Contains(t, b.String(), "settings     d=2s")
}

func TestCollectWithoutIMDS(t *testing.T) {
	// A closed port: the connection is refused at once.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := "http://" + ln.Addr().String()
	require.NoError(t, ln.Close())
	m := runinfo.Collect(context.Background(), &runinfo.Config{IMDSEndpoint: closed})
	assert.Nil(t, m.EC2)
	// "not on EC2" needs the host's firmware to say so (see ec2note_test.go);
	// a refused connection alone is "unknown".
	assert.True(t, strings.HasPrefix(m.EC2Note, "not on EC2"+": ") || strings.HasPrefix(m.EC2Note, "unknown"+" ("), m.EC2Note)
	assert.Contains(t, m.EC2Note, "no IMDSv2 answer")

	// A service that accepts and never answers: the timeout ends it.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer silent.Close()
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	start := time.Now()
	m = runinfo.Collect(context.Background(), &runinfo.Config{IMDSEndpoint: "http://" + silent.Addr().String(), IMDSTimeout: 200 * time.Millisecond})
	assert.Less(t, time.Since(start), 5*time.Second, "the IMDS timeout bounds Collect")
	assert.Nil(t, m.EC2)
	assert.Contains(t, m.EC2Note, "no instance metadata service answered within 200ms")

	m = runinfo.Collect(context.Background(), &runinfo.Config{IMDSEndpoint: "off"})
	assert.Contains(t, m.EC2Note, "the instance metadata service was not asked")
}

func TestCollectHost(t *testing.T) {
	m := runinfo.Collect(context.Background(), &runinfo.Config{IMDSEndpoint: "off", Interface: "lo"})
	assert.Equal(t, runtime.NumCPU(), m.CPUs)
	assert.Equal(t, runtime.Version(), m.GoVersion)
	assert.NotEmpty(t, m.NetperfkitVersion)
	require.NotNil(t, m.Interface)
	assert.Equal(t, "lo", m.Interface.Name)
	if runtime.GOOS == "linux" {
		assert.NotEmpty(t, m.Kernel)
		assert.Equal(t, 65536, m.Interface.MTU, "loopback's MTU")
	}
	var b bytes.Buffer
	require.NoError(t, m.WriteText(&b))
	assert.True(t, strings.HasPrefix(b.String(), "run metadata\n"))
	assert.Regexp(t, `\n  ec2 +(not on EC2|unknown) `, b.String())
}
