package cache_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/internal/resp"
)

// fakeNode serves RESP on a loopback port, answering each command with what
// reply returns for its arguments (raw RESP), until the test ends. It
// returns the address and the port.
func fakeNode(t *testing.T, reply func(args []string) string) (addr string, port int) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns = map[net.Conn]bool{}
	)
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns[c] = true
			mu.Unlock()
			wg.Go(func() {
				defer func() {
					mu.Lock()
					delete(conns, c)
					mu.Unlock()
					c.Close()
				}()
				rd := resp.NewReader(bufio.NewReader(c), resp.DefaultLimits)
				for {
					v, err := rd.Read()
					if err != nil {
						return
					}
					args := make([]string, len(v.Elems))
					for i, e := range v.Elems {
						args[i] = e.Text()
					}
					if len(args) == 0 {
						return
					}
					if _, err := c.Write([]byte(reply(args))); err != nil {
						return
					}
				}
			})
		}
	})
	return l.Addr().String(), l.Addr().(*net.TCPAddr).Port
}

// slotsReply is a CLUSTER SLOTS reply giving every slot to host:port.
func slotsReply(host string, port int) string {
	return fmt.Sprintf("*1\r\n*3\r\n:0\r\n:16383\r\n*2\r\n$%d\r\n%s\r\n:%d\r\n", len(host), host, port)
}

// A redirect whose host is empty (Redis 7 with
// cluster-preferred-endpoint-type unknown-endpoint: "MOVED 12182 :44509")
// or "?" goes to the host of the node that sent it. Node A owns every slot
// by CLUSTER SLOTS but redirects every GET and SET to node B on its host.
func TestRunFollowsRedirectWithoutHost(t *testing.T) {
	for _, kind := range []string{"MOVED", "ASK"} {
		for _, host := range []string{"", "?"} {
			t.Run(fmt.Sprintf("%s %q", kind, host), func(t *testing.T) {
				var atB, askingAtB atomic.Int64
				_, portB := fakeNode(t, func(args []string) string {
					switch strings.ToUpper(args[0]) {
					case "ASKING":
						askingAtB.Add(1)
						return "+OK\r\n"
					case "GET":
						atB.Add(1)
						return "$-1\r\n"
					}
					atB.Add(1)
					return "+OK\r\n"
				})
				var portA atomic.Int64 // known once A listens
				addrA, pa := fakeNode(t, func(args []string) string {
					switch strings.ToUpper(args[0]) {
					case "CLUSTER":
						return slotsReply("127.0.0.1", int(portA.Load()))
					case "GET", "SET":
						return fmt.Sprintf("-%s %d %s:%d\r\n", kind, 100, host, portB)
					}
					return "+OK\r\n"
				})
				portA.Store(int64(pa))
				r, err := cache.Run(context.Background(), &cache.Endpoint{Addr: addrA, Cluster: true, ConnectTimeout: time.Second},
					&cache.WorkloadConfig{Workers: 1, Duration: 200 * time.Millisecond, KeySpace: 10})
				require.NoError(t, err)
				require.Zero(t, r.Errors, "%v", r.ErrorExamples)
				require.Positive(t, r.Attempts)
				assert.Equal(t, r.Attempts, atB.Load(), "every operation ran on B")
				if kind == "ASK" {
					assert.Equal(t, r.Attempts, askingAtB.Load(), "each ASK is followed by ASKING")
				}
			})
		}
	}
}

// A worker whose node's name does not resolve is paced like a refused
// connection: one attempt per millisecond at most, not a lookup storm. The
// seed answers CLUSTER SLOTS (so the endpoint check passes) with a node
// whose host name the resolver fails at once.
func TestRunPacesDNSFailures(t *testing.T) {
	var lookups atomic.Int64
	res := &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
		lookups.Add(1)
		return nil, errors.New("no DNS server here")
	}}
	addr, _ := fakeNode(t, func(args []string) string {
		if strings.ToUpper(args[0]) == "CLUSTER" {
			return slotsReply("node.cache.invalid", 6379)
		}
		return "+OK\r\n"
	})
	for _, mode := range []cache.ConnMode{cache.Pooled, cache.ConnectPerOp} {
		t.Run(string(mode), func(t *testing.T) {
			lookups.Store(0)
			r, err := cache.Run(context.Background(), &cache.Endpoint{Addr: addr, Cluster: true, Resolver: res},
				&cache.WorkloadConfig{Mode: mode, Workers: 1, Duration: 200 * time.Millisecond})
			require.ErrorIs(t, err, cache.ErrDNS, "every operation failed")
			t.Logf("%d attempts, %d DNS dials in %v", r.Attempts, lookups.Load(), r.Elapsed)
			require.Positive(t, r.Errors)
			assert.Equal(t, map[cache.ErrorKind]int64{cache.ErrDNS: r.Errors}, r.ErrorsByKind, "%v", r.ErrorExamples)
			// Each failed attempt lasts at least a millisecond.
			assert.LessOrEqual(t, r.Attempts, int64(r.Window/time.Millisecond)+1)
		})
	}
}
