//go:build linux

package ports

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"github.com/netperfkit/netperfkit/internal/portrange"
)

// Read takes a snapshot of the sockets towards e in the caller's network
// namespace. A missing /proc/net/tcp6 (IPv6 disabled) is not an error.
func Read(e *Endpoint) (*Snapshot, error) {
	s := &Snapshot{}
	var err error
	if s.RangeLo, s.RangeHi, err = portrange.Read(); err != nil {
		return nil, err
	}
	reuse := false
	if b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_tw_reuse"); err == nil {
		v, err := strconv.Atoi(strings.TrimSpace(string(b)))
		reuse = err == nil && e.reuses(v)
	}
	for _, name := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(name)
		if errors.Is(err, fs.ErrNotExist) && name == "/proc/net/tcp6" {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("ports: %w", err)
		}
		err = parseTCP(f, e, s, reuse)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%w (%s)", err, name)
		}
	}
	return s, nil
}
