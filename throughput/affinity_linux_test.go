package throughput

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/netperfkit/netperfkit/internal/iperfwire"
	"github.com/netperfkit/netperfkit/internal/peertest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// pinTarget is the CPU the tests pin a server's streams to, the last one
// this process may use, and a CPU it may not use; it skips the test on a
// host with one CPU, where a pinned thread looks like any other.
func pinTarget(t *testing.T) (cpu, outside int) {
	t.Helper()
	var set unix.CPUSet
	require.NoError(t, unix.SchedGetaffinity(0, &set))
	if set.Count() < 2 {
		t.Skip("skipping: this process may run on one CPU only: pinned threads cannot be told apart")
	}
	cpu, outside = -1, -1
	for c := 0; c <= maxAffinity; c++ {
		switch {
		case set.IsSet(c):
			cpu = c
		case outside < 0:
			outside = c
		}
	}
	return cpu, outside
}

// threadsOn counts this process's threads whose allowed CPUs are exactly
// cpu, from /proc/self/task/*/status.
func threadsOn(cpu int) int {
	tasks, _ := filepath.Glob("/proc/self/task/*/status")
	n := 0
	for _, st := range tasks {
		b, err := os.ReadFile(st)
		if err != nil {
			continue // the thread has exited
		}
		if strings.Contains(string(b), "\nCpus_allowed_list:\t"+strconv.Itoa(cpu)+"\n") {
			n++
		}
	}
	return n
}

// pinWatch is a server that counts, at each of its interval reports, the
// threads pinned to cpu, and keeps the largest count.
type pinWatch struct {
	mu  sync.Mutex
	max int
}

// poll samples the pinned threads every millisecond or two until the
// returned stop is called, beside the server's interval reports: a
// starved reporter may cut no interval while the streams run, which on a
// loaded machine left a 600 ms test with no sample at all.
func (w *pinWatch) poll(cpu int) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			n := threadsOn(cpu)
			w.mu.Lock()
			w.max = max(w.max, n)
			w.mu.Unlock()
			select {
			case <-quit:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	return func() { close(quit); <-done }
}

func (w *pinWatch) most() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := w.max
	w.max = 0
	return m
}

func startPinServer(t *testing.T, cpu int, threads bool) (*pinWatch, string, <-chan *Result, <-chan *SessionError) {
	w := &pinWatch{}
	failures := make(chan *SessionError, 8)
	addr, results := startServer(t, &ServerConfig{Interval: 100 * time.Millisecond,
		OnEvent: func(e Event) {
			if e.Kind == EventInterval {
				n := threadsOn(cpu)
				w.mu.Lock()
				w.max = max(w.max, n)
				w.mu.Unlock()
			}
		},
		OnFailure: func(_ net.Addr, err error) {
			e := asSession(err)
			failures <- e
		}, SocketOptions: SocketOptions{StreamThreads: threads}})
	return w, addr, results, failures
}

// TestServerAffinityOwnClient: our client asks our server for a CPU; each
// of the test's server streams runs on a thread pinned to it while the test
// runs, on the poller and on stream threads, and no thread stays pinned
// after the test.
func TestServerAffinityOwnClient(t *testing.T) {
	cpu, _ := pinTarget(t)
	for _, threads := range []bool{false, true} {
		w, addr, results, _ := startPinServer(t, cpu, threads)
		for name, cfg := range map[string]Config{
			"tcp":           {Streams: 2},
			"tcp-reverse":   {Reverse: true},
			"tcp-bidir":     {Bidir: true},
			"udp-reverse-2": {UDP: true, Bitrate: 10e6, Reverse: true, Streams: 2},
			"udp":           {UDP: true, Bitrate: 10e6},
		} {
			t.Run(map[bool]string{false: "poller-", true: "threads-"}[threads]+name, func(t *testing.T) {
				cfg.Duration, cfg.Interval, cfg.ServerAffinity = 600*time.Millisecond, -1, new(cpu)
				stop := w.poll(cpu)
				res, err := Run(ctxT(t, 30*time.Second), addr, &cfg)
				stop()
				require.NoError(t, err)
				srv := <-results
				require.NotNil(t, srv.Config.ServerAffinity)
				assert.Equal(t, cpu, *srv.Config.ServerAffinity)
				assert.Equal(t, len(res.Streams), w.most(), "one pinned thread per server stream while the test ran")
				assert.Zero(t, threadsOn(cpu), "every thread got its CPUs back")
			})
		}
	}
}

// TestServerAffinityRefused: a CPU outside the server's allowed set is
// refused as 3.21 reports a failed sched_setaffinity: IEAFFINITY with
// EINVAL (TestFlowLabelAffinityParams checks 3.21's 0..1024).
func TestServerAffinityRefused(t *testing.T) {
	_, outside := pinTarget(t)
	_, addr, _, failures := startPinServer(t, 0, false)
	_, err := Run(ctxT(t, 30*time.Second), addr, &Config{Duration: 300 * time.Millisecond, ServerAffinity: new(outside)})
	require.ErrorIs(t, err, ErrAffinity)
	var se *ServerError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, iperfwire.IErrAffinity, se.IErrno)
	assert.Equal(t, int(syscall.EINVAL), se.Errno)
	f := <-failures
	assert.Equal(t, reasonLimit, f.Reason)
	assert.ErrorIs(t, f, ErrAffinity)
	assert.ErrorIs(t, f, syscall.EINVAL)
	assert.Contains(t, f.Error(), "CPU "+strconv.Itoa(outside)+" is not one of this server's CPUs")
}

// TestServerAffinityWith321: iperf3 3.21's client with -A n,m against our
// server: the server's streams run pinned to m; a CPU the server may not
// use fails the 3.21 client with 3.21's words.
func TestServerAffinityWith321(t *testing.T) {
	cpu, outside := pinTarget(t)
	bin := peertest.NewIPerf3(t, "CPU affinity setting")
	w, addr, results, _ := startPinServer(t, cpu, true)
	for _, args := range [][]string{
		{"-t", "1", "-A", "0," + strconv.Itoa(cpu)},
		{"-t", "1", "-A", "0," + strconv.Itoa(cpu), "-R", "-P", "2"},
		{"-t", "1", "-A", "0," + strconv.Itoa(cpu), "-u", "-b", "10M"},
	} {
		runIperf3ClientBin(t, bin, addr, args...)
		srv := <-results
		require.NotNil(t, srv.Config.ServerAffinity, "%v", args)
		assert.Equal(t, cpu, *srv.Config.ServerAffinity)
		assert.Equal(t, len(srv.Streams), w.most(), "%v: one pinned thread per server stream", args)
		assert.Zero(t, threadsOn(cpu))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	port := strconv.Itoa(portOf(t, addr))
	out, err := exec.CommandContext(ctx, bin, "-c", "127.0.0.1", "-p", port, "-t", "1", "-J", "-A", "0,"+strconv.Itoa(outside)).Output()
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "3.21's client fails: %v %s", err, out)
	var doc struct {
		Error string `json:"error"`
	}
	require.NoError(t, json.Unmarshal(out, &doc), string(out))
	assert.Contains(t, doc.Error, "unable to set CPU affinity", string(out))
	assert.Contains(t, doc.Error, "Invalid argument", string(out))
}

func TestCPUList(t *testing.T) {
	var set unix.CPUSet
	assert.Equal(t, "", cpuList(&set))
	for _, c := range []int{0, 1, 2, 3, 6, 8, 9, 1023} {
		set.Set(c)
	}
	assert.Equal(t, "0-3,6,8-9,1023", cpuList(&set))
}

// TestPinFailureReturnsThreadP: a stream whose thread cannot be pinned (its
// CPU went away after the parameters were checked) ends with ErrAffinity
// and gives back the P lent for its thread, so GOMAXPROCS comes back.
func TestPinFailureReturnsThreadP(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	cfg := withDefaults((&Config{SocketOptions: SocketOptions{StreamThreads: true}}))
	e := newEngine(&cfg, false)
	a, _ := tcpPair(t)
	s := &flowStream{conn: a}
	e.streams = []*flowStream{s}
	e.startThreads()
	require.NotNil(t, threadOf(s.conn), "the stream got a thread")
	e.cpu = 1023 // no such CPU here
	err := e.run(s)
	require.ErrorIs(t, err, ErrAffinity)
	threadPs.Lock()
	lent := threadPs.lent
	threadPs.Unlock()
	assert.Zero(t, lent, "the thread's P is given back")
	assert.Equal(t, before, runtime.GOMAXPROCS(0))
	_ = s.conn.Close()
}
