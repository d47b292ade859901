package throughput

import (
	"encoding/binary"
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/internal/peertest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// flowKey is one direction of one connection or UDP stream of a test:
// its transport, whether it goes to the server, and the client's port.
type flowKey struct {
	udp        bool
	toServer   bool
	clientPort int
}

// labelCapture records the IPv6 flow labels of the packets on lo to and
// from one server port, read with an AF_PACKET socket (root).
type labelCapture struct {
	fd       int
	port     int
	stopping atomic.Bool
	done     chan struct{}
	mu       sync.Mutex
	seen     map[flowKey]map[uint32]bool
}

// captureLabels starts a capture of the IPv6 packets on lo to or from
// port; labels stops it and returns what it saw. It skips the test
// without root (fails with NETPERFKIT_REQUIRE_PEERS=1).
func captureLabels(t *testing.T, port int) *labelCapture {
	t.Helper()
	if os.Geteuid() != 0 {
		peertest.Missing(t, "an AF_PACKET capture on lo needs root", "run as root")
		return nil
	}
	lo, err := net.InterfaceByName("lo")
	require.NoError(t, err)
	proto := int(htons(unix.ETH_P_IPV6))
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, proto)
	require.NoError(t, err)
	// The kernel keeps the first 64 bytes of each packet (the IPv6 header
	// and the ports): a fast test fills no buffer with payload.
	prog := []unix.SockFilter{{Code: unix.BPF_RET | unix.BPF_K, K: 64}}
	require.NoError(t, unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &unix.SockFprog{Len: 1, Filter: &prog[0]}))
	require.NoError(t, unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: uint16(proto), Ifindex: lo.Index}))
	tv := unix.NsecToTimeval((20 * time.Millisecond).Nanoseconds())
	require.NoError(t, unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv))
	c := &labelCapture{fd: fd, port: port, done: make(chan struct{}), seen: map[flowKey]map[uint32]bool{}}
	go c.read()
	t.Cleanup(func() { c.labels() })
	return c
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// read records packets until stopped, then drains what is queued (for at
// most 2 s, should other IPv6 traffic on lo never pause).
func (c *labelCapture) read() {
	defer close(c.done)
	defer unix.Close(c.fd)
	buf := make([]byte, 64)
	var stopAt time.Time
	for {
		if c.stopping.Load() && stopAt.IsZero() {
			stopAt = time.Now()
		}
		n, _, err := unix.Recvfrom(c.fd, buf, 0)
		switch {
		case errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR):
			if !stopAt.IsZero() {
				return
			}
			continue
		case err != nil:
			return
		}
		c.record(buf[:n])
		if !stopAt.IsZero() && time.Since(stopAt) > 2*time.Second {
			return
		}
	}
}

// record notes the flow label of one IPv6 packet with a TCP or UDP header
// right after the fixed header, as on lo.
func (c *labelCapture) record(p []byte) {
	if len(p) < 44 || p[0]>>4 != 6 || (p[6] != unix.IPPROTO_TCP && p[6] != unix.IPPROTO_UDP) {
		return
	}
	label := binary.BigEndian.Uint32(p[0:4]) & maxFlowLabel
	src, dst := int(binary.BigEndian.Uint16(p[40:])), int(binary.BigEndian.Uint16(p[42:]))
	k := flowKey{udp: p[6] == unix.IPPROTO_UDP}
	switch c.port {
	case dst:
		k.toServer, k.clientPort = true, src
	case src:
		k.clientPort = dst
	default:
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen[k] == nil {
		c.seen[k] = map[uint32]bool{}
	}
	c.seen[k][label] = true
}

// labels stops the capture and returns the labels seen in each direction
// of each flow.
func (c *labelCapture) labels() map[flowKey]map[uint32]bool {
	c.stopping.Store(true)
	<-c.done
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen
}

// only reports whether labels holds exactly label.
func only(labels map[uint32]bool, label uint32) bool {
	return len(labels) == 1 && labels[label]
}

func portOf(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	n, err := strconv.Atoi(p)
	require.NoError(t, err)
	return n
}

// reflectsLabels reports whether this host's accepted TCP sockets send
// with the client's label (net.ipv6.flowlabel_reflect, bit 0).
func reflectsLabels() bool {
	b, err := os.ReadFile("/proc/sys/net/ipv6/flowlabel_reflect")
	if err != nil {
		return false
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n&1 != 0
}

const testLabel = 0x12345

// TestFlowLabelOnTheWire runs our client with Config.FlowLabel against
// our server on ::1 and reads the labels off lo: the client's data
// streams carry it, TCP and UDP, forward and reverse; the server's UDP
// streams carry it too; the control connection does not.
func TestFlowLabelOnTheWire(t *testing.T) {
	addr, results := startServerAt(t, "[::1]:0", nil)
	for name, cfg := range map[string]Config{
		"tcp":         {Streams: 2},
		"tcp-reverse": {Reverse: true},
		// The label's connect binds the local address itself.
		"tcp-bind-cport": {Streams: 2, SocketOptions: SocketOptions{BindAddr: "::1", ClientPort: peertest.QuietPorts(t, 2)}},
		"udp":            {UDP: true, Bitrate: 10e6, BlockLen: 1400},
		"udp-reverse":    {UDP: true, Bitrate: 10e6, BlockLen: 1400, Reverse: true},
		"udp-bidir":      {UDP: true, Bitrate: 10e6, BlockLen: 1400, Bidir: true},
	} {
		t.Run(name, func(t *testing.T) {
			capture := captureLabels(t, portOf(t, addr))
			cfg.Duration, cfg.Interval, cfg.FlowLabel = 300*time.Millisecond, -1, testLabel
			if !cfg.UDP {
				cfg.Bitrate = 50e6 // packets enough, without filling the capture
			}
			res, err := Run(ctxT(t, 30*time.Second), addr, &cfg)
			require.NoError(t, err)
			srv := <-results
			assert.Equal(t, testLabel, srv.Config.FlowLabel, "the server takes the client's flowlabel parameter")
			seen := capture.labels()
			require.Len(t, res.Streams, len(sends(&res.Config, false)))
			if cfg.ClientPort != 0 {
				assert.Equal(t, cfg.ClientPort, portOf(t, res.Streams[0].LocalAddr), "--cport")
				assert.Equal(t, cfg.ClientPort+1, portOf(t, res.Streams[1].LocalAddr))
			}
			for _, s := range res.Streams {
				k := flowKey{udp: cfg.UDP, toServer: true, clientPort: portOf(t, s.LocalAddr)}
				assert.True(t, only(seen[k], testLabel), "stream %d to the server: labels %v", s.ID, seen[k])
				back := flowKey{udp: cfg.UDP, clientPort: k.clientPort}
				switch {
				case cfg.UDP:
					assert.True(t, only(seen[back], testLabel), "udp stream %d from the server: labels %v", s.ID, seen[back])
				case !reflectsLabels():
					// An accepted TCP socket has no label of its own,
					// with 3.21's server as with ours.
					assert.NotEmpty(t, seen[back])
					assert.False(t, seen[back][testLabel], "tcp stream %d from the server: labels %v", s.ID, seen[back])
				}
			}
			ctrl := flowKey{toServer: true, clientPort: portOf(t, res.LocalAddr)}
			assert.NotEmpty(t, seen[ctrl])
			assert.False(t, seen[ctrl][testLabel], "the control connection keeps the kernel's label, as in 3.21")
		})
	}
}

// TestFlowLabelIPv4 does what 3.21 does with a label over IPv4: a TCP
// stream fails with "unable to set IPv6 flow label", a UDP test runs
// without a label (with a note).
func TestFlowLabelIPv4(t *testing.T) {
	addr, results := startServer(t, nil)
	_, err := Run(ctxT(t, 30*time.Second), addr, &Config{Duration: 200 * time.Millisecond, SocketOptions: SocketOptions{FlowLabel: 5}})
	require.ErrorIs(t, err, ErrFlowLabel)
	assert.Contains(t, err.Error(), "unable to set IPv6 flow label")
	res, err := Run(ctxT(t, 30*time.Second), addr, &Config{UDP: true, Duration: 200 * time.Millisecond, Interval: -1, SocketOptions: SocketOptions{FlowLabel: 5}})
	require.NoError(t, err)
	assert.Contains(t, res.Notes, noteFlowLabelIPv4)
	srv := <-results
	assert.Contains(t, srv.Notes, noteFlowLabelIPv4)
	assert.Equal(t, 5, srv.Config.FlowLabel)
}

// TestFlowLabelWith321 runs our client with a label against iperf3 3.21's
// server, and 3.21's client with -L against ours, on ::1, reading the
// labels off lo.
func TestFlowLabelWith321(t *testing.T) {
	bin := peertest.NewIPerf3(t, "IPv6 flow label")
	t.Run("our-client", func(t *testing.T) {
		stock := startIperf3ServerOn(t, bin, "::1")
		for name, cfg := range map[string]Config{"tcp": {}, "tcp-reverse": {Reverse: true}, "udp": {UDP: true, Bitrate: 10e6, BlockLen: 1400}} {
			capture := captureLabels(t, portOf(t, stock))
			cfg.Duration, cfg.Interval, cfg.FlowLabel = time.Second, -1, testLabel
			if !cfg.UDP {
				cfg.Bitrate = 50e6
			}
			res, err := runRetry(t, stock, &cfg)
			require.NoError(t, err, name)
			seen := capture.labels()
			require.NotEmpty(t, res.Streams)
			for _, s := range res.Streams {
				k := flowKey{udp: cfg.UDP, toServer: true, clientPort: portOf(t, s.LocalAddr)}
				assert.True(t, only(seen[k], testLabel), "%s: stream %d to the server: labels %v", name, s.ID, seen[k])
			}
		}
	})
	t.Run("321-client", func(t *testing.T) {
		addr, results := startServerAt(t, "[::1]:0", nil)
		for _, args := range [][]string{
			{"-t", "1", "-b", "50M", "-L", "0x12345"},
			{"-t", "1", "-b", "50M", "-L", "0x12345", "-R"},
			{"-t", "1", "-u", "-b", "10M", "-L", "0x12345", "-R"},
		} {
			capture := captureLabels(t, portOf(t, addr))
			runIperf3ClientBin(t, bin, addr, args...)
			srv := <-results
			assert.Equal(t, testLabel, srv.Config.FlowLabel, "%v", args)
			seen := capture.labels()
			require.NotEmpty(t, srv.Streams)
			for _, s := range srv.Streams {
				// The server's stream's remote port is the client's.
				k := flowKey{udp: srv.Config.UDP, toServer: true, clientPort: portOf(t, s.RemoteAddr)}
				back := flowKey{udp: srv.Config.UDP, clientPort: k.clientPort}
				if srv.Config.UDP {
					// 3.21 labels no UDP socket; our server labels its
					// reverse data with the client's label.
					assert.True(t, only(seen[back], testLabel), "%v: from the server: labels %v", args, seen[back])
					continue
				}
				assert.True(t, only(seen[k], testLabel), "%v: to the server: labels %v", args, seen[k])
			}
		}
	})
}
