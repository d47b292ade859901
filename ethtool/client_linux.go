//go:build linux

package ethtool

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

const (
	ethSSStats    = 1  // ETH_SS_STATS
	ethGStringLen = 32 // ETH_GSTRING_LEN
	// maxAttempts bounds the re-reads when the driver's count keeps
	// changing between GSSET_INFO and GSTRINGS/GSTATS.
	maxAttempts = 5
)

// ifreq is struct ifreq with its union used as a data pointer. It is larger
// than the kernel's on every architecture, which is harmless: the kernel
// copies only its own size.
type ifreq struct {
	name [unix.IFNAMSIZ]byte
	data unsafe.Pointer
	_    [24]byte
}

// ssetInfo is struct ethtool_sset_info asking for one string set.
type ssetInfo struct {
	cmd      uint32
	reserved uint32
	mask     uint64
	data     [1]uint32
}

// ringparam is struct ethtool_ringparam.
type ringparam struct {
	cmd                                   uint32
	rxMax, rxMiniMax, rxJumboMax, txMax   uint32
	rxPending, rxMini, rxJumbo, txPending uint32
}

type client struct {
	mu sync.Mutex
	fd int

	// Buffers reused between calls, and the names decoded from the last
	// GSTRINGS answer, reused while the kernel returns the same bytes.
	strBuf   []byte
	statBuf  []uint64
	rawNames []byte
	names    []string
	// Last driver information, reused while the kernel answers the same.
	rawDrv unix.EthtoolDrvinfo
	drv    driverInfo
	// Command buffers live here, not on the stack, so that handing them to
	// the kernel (or the test seam) costs no allocation.
	si ssetInfo
	di unix.EthtoolDrvinfo
	rp ringparam

	// kernel, when set, replaces the SIOCETHTOOL syscall (tests play a
	// kernel with it).
	kernel func(iface string, data unsafe.Pointer) unix.Errno
}

func newClient() (*client, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		// A kernel without IPv4 still has AF_UNIX, which serves ioctls too.
		fd, err = unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("ethtool: opening ioctl socket: %w", err)
		}
	}
	return &client{fd: fd}, nil
}

func (c *client) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fd < 0 {
		return nil
	}
	err := unix.Close(c.fd)
	c.fd = -1
	return err
}

// ioctl runs SIOCETHTOOL for iface with data as the ethtool command buffer.
func (c *client) ioctl(op, iface string, data unsafe.Pointer) error {
	if c.fd < 0 {
		return errClosed
	}
	var ifr ifreq
	if len(iface) == 0 || len(iface) >= unix.IFNAMSIZ || bytes.IndexByte([]byte(iface), 0) >= 0 {
		return &opError{op: op, iface: iface, err: ErrNoInterface}
	}
	var errno unix.Errno
	if c.kernel != nil {
		errno = c.kernel(iface, data)
	} else {
		copy(ifr.name[:], iface)
		ifr.data = data
		_, _, errno = unix.Syscall(unix.SYS_IOCTL, uintptr(c.fd), uintptr(unix.SIOCETHTOOL), uintptr(unsafe.Pointer(&ifr)))
	}
	if errno != 0 {
		var err error = errno
		if errno == unix.ENODEV {
			err = ErrNoInterface
		}
		return &opError{op: op, iface: iface, err: err}
	}
	return nil
}

func (c *client) driverInfo(iface string) (driverInfo, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.di = unix.EthtoolDrvinfo{Cmd: unix.ETHTOOL_GDRVINFO}
	if err := c.ioctl("GDRVINFO", iface, unsafe.Pointer(&c.di)); err != nil {
		return driverInfo{}, err
	}
	di := &c.di
	if *di == c.rawDrv {
		return c.drv, nil
	}
	c.rawDrv = *di
	c.drv = driverInfo{
		Driver:          cstr(di.Driver[:]),
		Version:         cstr(di.Version[:]),
		FirmwareVersion: cstr(di.Fw_version[:]),
		BusInfo:         cstr(di.Bus_info[:]),
		NStats:          di.N_stats,
	}
	return c.drv, nil
}

func (c *client) ringParams(iface string) (RingParams, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rp = ringparam{cmd: unix.ETHTOOL_GRINGPARAM}
	if err := c.ioctl("GRINGPARAM", iface, unsafe.Pointer(&c.rp)); err != nil {
		return RingParams{}, err
	}
	rp := &c.rp
	return RingParams{RxMax: rp.rxMax, TxMax: rp.txMax, Rx: rp.rxPending, Tx: rp.txPending}, nil
}

// stats appends the statistics of iface to dst.
func (c *client) stats(iface string, dst Stats) (Stats, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for range maxAttempts {
		n, err := c.count(iface)
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return nil, &opError{op: "GSSET_INFO", iface: iface, err: ErrNoStats}
		}
		ok, err := c.readNames(iface, n)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		vals, ok, err := c.readValues(iface, n)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		for i, v := range vals {
			dst = append(dst, Stat{Name: c.names[i], Value: v})
		}
		return dst, nil
	}
	return nil, &opError{op: "GSTATS", iface: iface, err: errors.New("statistics count kept changing while reading")}
}

// count asks for the number of statistics (ETHTOOL_GSSET_INFO).
func (c *client) count(iface string) (int, error) {
	c.si = ssetInfo{cmd: unix.ETHTOOL_GSSET_INFO, mask: 1 << ethSSStats}
	si := &c.si
	if err := c.ioctl("GSSET_INFO", iface, unsafe.Pointer(si)); err != nil {
		if errors.Is(err, unix.EOPNOTSUPP) {
			return 0, nil
		}
		return 0, err
	}
	if si.mask&(1<<ethSSStats) == 0 {
		return 0, nil
	}
	if si.data[0] > maxStats {
		return 0, &opError{op: "GSSET_INFO", iface: iface, err: fmt.Errorf("driver declares %d statistics", si.data[0])}
	}
	return int(si.data[0]), nil
}

// Both buffers hold maxStats entries, whatever was asked: kernels before
// 7b07be1ff1cb write the driver's current count whatever the request said,
// and a driver's count can grow without bound between GSSET_INFO and the
// read (ENA's with its queues: 45 statistics with one queue, about 240 with
// eight), so no margin over the request is safe; maxStats is the most any
// count is taken to be (count refuses more). The buffers are allocated once
// per client, and pages the kernel never writes are never touched.

// readNames reads n names (ETHTOOL_GSTRINGS) into c.names. It reports false
// when the kernel answered with a different count, which newer kernels do
// (returning 0) when the requested count is stale.
func (c *client) readNames(iface string, n int) (bool, error) {
	const hdr = 12 // cmd, string_set, len
	size := hdr + maxStats*ethGStringLen
	if cap(c.strBuf) < size {
		c.strBuf = make([]byte, size)
	}
	buf := c.strBuf[:size]
	*(*uint32)(unsafe.Pointer(&buf[0])) = unix.ETHTOOL_GSTRINGS
	*(*uint32)(unsafe.Pointer(&buf[4])) = ethSSStats
	*(*uint32)(unsafe.Pointer(&buf[8])) = uint32(n)
	if err := c.ioctl("GSTRINGS", iface, unsafe.Pointer(&buf[0])); err != nil {
		if errors.Is(err, unix.EOPNOTSUPP) {
			return false, &opError{op: "GSTRINGS", iface: iface, err: ErrNoStats}
		}
		return false, err
	}
	if got := int(*(*uint32)(unsafe.Pointer(&buf[8]))); got != n {
		return false, nil
	}
	raw := buf[hdr : hdr+n*ethGStringLen]
	if len(c.names) == n && bytes.Equal(raw, c.rawNames) {
		return true, nil
	}
	c.rawNames = append(c.rawNames[:0], raw...)
	c.names = make([]string, n)
	for i := range n {
		c.names[i] = cstr(raw[i*ethGStringLen : (i+1)*ethGStringLen])
	}
	return true, nil
}

// readValues reads n values (ETHTOOL_GSTATS); false as for readNames.
func (c *client) readValues(iface string, n int) ([]uint64, bool, error) {
	size := 1 + maxStats // one word of cmd and n_stats, then the values
	if cap(c.statBuf) < size {
		c.statBuf = make([]uint64, size)
	}
	buf := c.statBuf[:size]
	h := (*[2]uint32)(unsafe.Pointer(&buf[0]))
	h[0] = unix.ETHTOOL_GSTATS
	h[1] = uint32(n)
	if err := c.ioctl("GSTATS", iface, unsafe.Pointer(&buf[0])); err != nil {
		if errors.Is(err, unix.EOPNOTSUPP) {
			return nil, false, &opError{op: "GSTATS", iface: iface, err: ErrNoStats}
		}
		return nil, false, err
	}
	if int(h[1]) != n {
		return nil, false, nil
	}
	return buf[1 : 1+n], true, nil
}

// cstr returns the bytes of b up to the first NUL as a string.
func cstr(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}
