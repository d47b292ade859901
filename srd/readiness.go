package srd

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/netperfkit/netperfkit/ethtool"
)

// Status is the outcome of one readiness check.
type Status string

// Check outcomes.
const (
	StatusPass Status = "pass"
	// StatusWarn: a recommendation is not met, or the value could not be
	// read.
	StatusWarn Status = "warn"
	// StatusFail: a requirement of ENA Express is not met.
	StatusFail Status = "fail"
)

// Check is one readiness check.
type Check struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Expect string `json:"expect"`
	Status Status `json:"status"`
	// Required is set for the checks AWS lists as required rather than
	// recommended.
	Required bool   `json:"required"`
	Detail   string `json:"detail,omitempty"`
}

// ReadinessConfig tunes Readiness. A nil *ReadinessConfig means all defaults.
type ReadinessConfig struct {
	// Root is prepended to /proc and /sys paths, so tests can point it at a
	// directory of fixtures. "" means "/". As in sysfs, the interface's
	// directory under Root must hold an ifindex file.
	Root string
	// HighRTT raises tcp_limit_output_bytes to 4 MiB, as AWS recommends for
	// high-RTT (cross-AZ) paths. The buffer and congestion control checks
	// run in any case.
	HighRTT bool
	// rings reads the ring sizes of an interface, for tests. nil means an
	// ethtool.Client (ETHTOOL_GRINGPARAM) opened for the call.
	rings func(iface string) (ethtool.RingParams, error)
}

// Thresholds from AWS's check-ena-express-settings.sh and the ENA Express
// documentation.
const (
	maxMTU            = 8900
	minTCPLimit       = 1 << 20
	minTCPLimitHigh   = 4 << 20
	minTxRing         = 1024
	minRxRing         = 8192
	minBufMax         = 8 << 20
	minBufDefault     = 4 << 20
	dqlMaxLimit       = 1879048192 // DQL_MAX_LIMIT: "echo max > limit_min" reads back as this
	wantCongestionAlg = "cubic"
)

// Readiness checks the host's settings for ENA Express on iface the way
// AWS's check-ena-express-settings.sh does: required MTU <= 8900,
// tcp_limit_output_bytes >= 1 MiB (4 MiB with HighRTT) and BQL off;
// recommended tcp_autocorking 0, TX ring >= min(1024, max), RX ring >=
// min(8192, max), tcp_rmem/tcp_wmem max >= 8 MiB, net.core.[rw]mem_default
// >= 4 MiB and _max >= 8 MiB, cubic congestion control with
// hystart_detect 0. A value that cannot be read gives a warn check, not an
// error. The error is non-nil only when iface itself cannot be checked: it
// matches os.ErrNotExist when iface is not a valid interface name (empty,
// "." or "..", longer than 15 bytes, or holding '/', ':' or white space,
// which the kernel refuses) or names no interface under Root (no directory
// in sys/class/net, or one without an ifindex file), and os.ErrPermission
// when the interface's directory cannot be read.
func Readiness(iface string, cfg *ReadinessConfig) ([]Check, error) {
	var c ReadinessConfig
	if cfg != nil {
		c = *cfg
	}
	root := c.Root
	if root == "" {
		root = "/"
	}
	p := func(parts ...string) string { return filepath.Join(append([]string{root}, parts...)...) }
	if why := invalidInterfaceName(iface); why != "" {
		return nil, fmt.Errorf("srd: readiness: invalid interface name %q (%s): %w", iface, why, os.ErrNotExist)
	}
	netDir := p("sys", "class", "net", iface)
	if err := isInterface(iface, netDir); err != nil {
		return nil, err
	}

	var out []Check
	// MTU.
	out = append(out, intCheck("mtu", filepath.Join(netDir, "mtu"), fmt.Sprintf("<= %d", maxMTU), true,
		func(v int64) bool { return v <= maxMTU }, "packets above the SRD MTU of 8900 bytes fall back to plain ENA; set the MTU to 8900 or less"))
	// tcp_limit_output_bytes.
	limit := int64(minTCPLimit)
	if c.HighRTT {
		limit = minTCPLimitHigh
	}
	out = append(out, intCheck("net.ipv4.tcp_limit_output_bytes", p("proc", "sys", "net", "ipv4", "tcp_limit_output_bytes"),
		fmt.Sprintf(">= %d", limit), true, func(v int64) bool { return v >= limit },
		"TCP small queues throttle a single flow below what SRD can carry"))
	out = append(out, bqlCheck(root, netDir))
	out = append(out, intCheck("net.ipv4.tcp_autocorking", p("proc", "sys", "net", "ipv4", "tcp_autocorking"), "0", false,
		func(v int64) bool { return v == 0 }, "autocorking delays small writes and adds latency on SRD"))
	out = append(out, ringChecks(iface, c.rings)...)
	for _, b := range []struct{ name, file string }{
		{"net.ipv4.tcp_rmem max", "tcp_rmem"}, {"net.ipv4.tcp_wmem max", "tcp_wmem"},
	} {
		out = append(out, lastFieldCheck(b.name, p("proc", "sys", "net", "ipv4", b.file), minBufMax))
	}
	for _, b := range []struct {
		name string
		min  int64
	}{
		{"rmem_default", minBufDefault}, {"wmem_default", minBufDefault}, {"rmem_max", minBufMax}, {"wmem_max", minBufMax},
	} {
		out = append(out, intCheck("net.core."+b.name, p("proc", "sys", "net", "core", b.name), fmt.Sprintf(">= %d", b.min), false,
			func(v int64) bool { return v >= b.min }, bufWhy))
	}
	out = append(out, stringCheck("net.ipv4.tcp_congestion_control", p("proc", "sys", "net", "ipv4", "tcp_congestion_control"), wantCongestionAlg,
		"AWS's high-RTT recommendation is cubic with hystart_detect 0"))
	out = append(out, intCheck("tcp_cubic hystart_detect", p("sys", "module", "tcp_cubic", "parameters", "hystart_detect"), "0", false,
		func(v int64) bool { return v == 0 }, "HyStart leaves slow start early on SRD's variable RTT"))
	return out, nil
}

// maxInterfaceName is the longest interface name, IFNAMSIZ less its NUL.
const maxInterfaceName = 15

// invalidInterfaceName says why the kernel would refuse name as an
// interface name (dev_valid_name), "" when it would not. Such a name would
// otherwise reach another directory of sys/class/net, or outside it.
func invalidInterfaceName(name string) string {
	switch {
	case name == "":
		return "empty"
	case name == "." || name == "..":
		return "a directory name"
	case len(name) > maxInterfaceName:
		return fmt.Sprintf("longer than %d bytes", maxInterfaceName)
	case strings.ContainsAny(name, "/:\x00 \t\n\v\f\r"):
		return "holds '/', ':', NUL or white space"
	}
	return ""
}

// isInterface checks that dir, sys/class/net/iface, is an interface's: it
// exists and has the ifindex every interface has. The error matches
// os.ErrPermission when dir cannot be read and os.ErrNotExist otherwise.
func isInterface(iface, dir string) error {
	_, err := os.Stat(filepath.Join(dir, "ifindex"))
	switch {
	case err == nil:
		return nil
	case errors.Is(err, os.ErrPermission):
		return fmt.Errorf("srd: readiness: interface %s: %w", iface, err)
	}
	if _, derr := os.Stat(dir); derr != nil {
		if errors.Is(derr, os.ErrPermission) || errors.Is(derr, os.ErrNotExist) {
			return fmt.Errorf("srd: readiness: interface %s: %w", iface, derr)
		}
		// ENOTDIR, ELOOP...: whatever is there is no interface.
		return fmt.Errorf("srd: readiness: interface %s: %w (%w)", iface, os.ErrNotExist, derr)
	}
	return fmt.Errorf("srd: readiness: %s is not a network interface: %s has no ifindex: %w", iface, dir, os.ErrNotExist)
}

func readTrim(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

func unreadable(name, expect string, required bool, err error) Check {
	return Check{Name: name, Value: "unreadable", Expect: expect, Status: StatusWarn, Required: required, Detail: err.Error()}
}

func failStatus(required bool) Status {
	if required {
		return StatusFail
	}
	return StatusWarn
}

const bufWhy = "socket buffers must cover the bandwidth-delay product of high-RTT paths"

// intCheck reads a file holding one number and checks it with ok.
func intCheck(name, path, expect string, required bool, ok func(int64) bool, why string) Check {
	return numCheck(name, path, expect, required, func(s string) (string, error) { return s, nil }, ok, why)
}

// lastFieldCheck checks the maximum of a "min default max" file such as
// tcp_rmem: at least min, as a warning.
func lastFieldCheck(name, path string, min int64) Check {
	third := func(s string) (string, error) {
		f := strings.Fields(s)
		if len(f) != 3 {
			return "", fmt.Errorf("%s: want three numbers, got %q", path, s)
		}
		return f[2], nil
	}
	return numCheck(name, path, fmt.Sprintf(">= %d", min), false, third, func(v int64) bool { return v >= min }, bufWhy)
}

// numCheck reads path, picks the number out of its text and checks it with ok.
func numCheck(name, path, expect string, required bool, pick func(string) (string, error), ok func(int64) bool, why string) Check {
	s, err := readTrim(path)
	if err == nil {
		s, err = pick(s)
	}
	if err != nil {
		return unreadable(name, expect, required, err)
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return unreadable(name, expect, required, fmt.Errorf("%s: %q is not a number", path, s))
	}
	c := Check{Name: name, Value: s, Expect: expect, Status: StatusPass, Required: required}
	if !ok(v) {
		c.Status = failStatus(required)
		c.Detail = why
	}
	return c
}

func stringCheck(name, path, want, why string) Check {
	s, err := readTrim(path)
	if err != nil {
		return unreadable(name, want, false, err)
	}
	c := Check{Name: name, Value: s, Expect: want, Status: StatusPass}
	if s != want {
		c.Status = StatusWarn
		c.Detail = why
	}
	return c
}

// bqlCheck passes when byte queue limits cannot throttle the TX queues:
// either the ENA driver was loaded with enable_bql=0, or every TX queue's
// limit_min is at the maximum ("echo max > limit_min").
func bqlCheck(root, netDir string) Check {
	const name, expect = "byte queue limits (BQL)", "disabled"
	c := Check{Name: name, Expect: expect, Required: true}
	if s, err := readTrim(filepath.Join(root, "sys", "module", "ena", "parameters", "enable_bql")); err == nil && (s == "0" || s == "N") {
		c.Value, c.Status, c.Detail = "disabled (ena enable_bql="+s+")", StatusPass, ""
		return c
	}
	queues, _ := filepath.Glob(filepath.Join(netDir, "queues", "tx-*", "byte_queue_limits", "limit_min"))
	if len(queues) == 0 {
		return unreadable(name, expect, true, errors.New("no tx-*/byte_queue_limits/limit_min under "+netDir))
	}
	sort.Strings(queues)
	var active []string
	for _, q := range queues {
		s, err := readTrim(q)
		if err != nil {
			return unreadable(name, expect, true, err)
		}
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v < dqlMaxLimit {
			active = append(active, filepath.Base(filepath.Dir(filepath.Dir(q)))+"="+s)
		}
	}
	if len(active) == 0 {
		c.Value, c.Status = fmt.Sprintf("disabled on %d TX queues", len(queues)), StatusPass
		return c
	}
	c.Value = "active (limit_min " + strings.Join(active, " ") + ")"
	c.Status = StatusFail
	c.Detail = "BQL limits the bytes in flight per TX queue; write max to queues/tx-*/byte_queue_limits/limit_min"
	return c
}

// ringChecks reads the ring sizes and checks TX >= min(1024, max) and RX >=
// min(8192, max).
func ringChecks(iface string, rings func(string) (ethtool.RingParams, error)) []Check {
	txExpect := fmt.Sprintf(">= min(%d, max)", minTxRing)
	rxExpect := fmt.Sprintf(">= min(%d, max)", minRxRing)
	if rings == nil {
		rings = readRings
	}
	r, err := rings(iface)
	if err != nil {
		return []Check{unreadable("tx ring size", txExpect, false, err), unreadable("rx ring size", rxExpect, false, err)}
	}
	one := func(name, expect string, cur, maxv, want uint32) Check {
		need := min(want, maxv)
		c := Check{Name: name, Value: fmt.Sprintf("%d (max %d)", cur, maxv), Expect: expect, Status: StatusPass}
		if maxv == 0 {
			need = want
		}
		if cur < need {
			c.Status = StatusWarn
			c.Detail = fmt.Sprintf("raise it with ethtool -G %s to %d", iface, need)
		}
		return c
	}
	return []Check{
		one("tx ring size", txExpect, r.Tx, r.TxMax, minTxRing),
		one("rx ring size", rxExpect, r.Rx, r.RxMax, minRxRing),
	}
}

// worst returns the worst status among checks: fail over warn over pass.
func worst(checks []Check) Status {
	w := StatusPass
	for _, c := range checks {
		switch {
		case c.Status == StatusFail:
			return StatusFail
		case c.Status == StatusWarn:
			w = StatusWarn
		}
	}
	return w
}

// readRings opens an ethtool.Client, reads the ring sizes of iface and
// closes it.
func readRings(iface string) (ethtool.RingParams, error) {
	c, err := ethtool.New()
	if err != nil {
		return ethtool.RingParams{}, err
	}
	defer c.Close()
	return c.RingParams(iface)
}
