package pathlab

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// WaitListening waits, at most timeout, until a TCP socket in h's
// namespace listens on port (as a server started with Host.Command does
// some time after Start), and fails tb when none does. Connecting to find
// out would count as a client to servers like iperf3 -s -1.
func (h *Host) WaitListening(tb testing.TB, port int, timeout time.Duration) {
	tb.Helper()
	end := time.Now().Add(timeout)
	for {
		var found bool
		err := h.Do(func() error {
			for _, f := range []string{"/proc/thread-self/net/tcp", "/proc/thread-self/net/tcp6"} {
				fh, err := os.Open(f)
				if err != nil {
					continue // no IPv6
				}
				ok, err := listening(fh, port)
				fh.Close()
				if err != nil {
					return err
				}
				found = found || ok
			}
			return nil
		})
		if err != nil {
			tb.Fatalf("%v", err)
		}
		if found {
			return
		}
		if time.Now().After(end) {
			tb.Fatalf("pathlab: nothing listens on TCP port %d in %s after %v", port, h.Netns, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// listening reports whether /proc/net/tcp's table r has a socket in state
// LISTEN (0A) on port.
func listening(r io.Reader, port int) (bool, error) {
	sc := bufio.NewScanner(r)
	sc.Scan() // the header
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 {
			return false, fmt.Errorf("pathlab: /proc/net/tcp line %q", sc.Text())
		}
		i := strings.LastIndexByte(f[1], ':')
		if i < 0 {
			return false, fmt.Errorf("pathlab: /proc/net/tcp address %q", f[1])
		}
		p, err := strconv.ParseUint(f[1][i+1:], 16, 16)
		if err != nil {
			return false, fmt.Errorf("pathlab: /proc/net/tcp port %q: %w", f[1], err)
		}
		if int(p) == port && f[3] == "0A" {
			return true, nil
		}
	}
	return false, sc.Err()
}
