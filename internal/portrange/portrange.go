// Package portrange reads the host's ephemeral TCP port range,
// /proc/sys/net/ipv4/ip_local_port_range of the caller's network namespace:
// the range a connect(2) without a bind takes its local port from. The
// cache's port-use snapshot and the tests' quiet-port picker both need it.
package portrange

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
)

// Path is where linux keeps the range.
const Path = "/proc/sys/net/ipv4/ip_local_port_range"

// ErrMalformed marks text that is not a range: two ports, the first
// positive and not above the second, the second at most 65535.
var ErrMalformed = errors.New("portrange: malformed ip_local_port_range")

// Read reads the range from Path. Off linux it returns the error of
// opening Path.
func Read() (lo, hi int, err error) {
	f, err := os.Open(Path)
	if err != nil {
		return 0, 0, fmt.Errorf("portrange: %w", err)
	}
	defer f.Close()
	return Parse(f)
}

// Parse reads the range as linux writes it: "32768\t60999\n".
func Parse(r io.Reader) (lo, hi int, err error) {
	b, err := io.ReadAll(io.LimitReader(r, 64))
	if err != nil {
		return 0, 0, fmt.Errorf("portrange: %w", err)
	}
	f := bytes.Fields(b)
	if len(f) != 2 {
		return 0, 0, fmt.Errorf("%w: %q", ErrMalformed, b)
	}
	lo, err1 := strconv.Atoi(string(f[0]))
	hi, err2 := strconv.Atoi(string(f[1]))
	if errors.Join(err1, err2) != nil || lo <= 0 || hi > 65535 || lo > hi {
		return 0, 0, fmt.Errorf("%w: %q", ErrMalformed, b)
	}
	return lo, hi, nil
}
