//go:build linux

package ethtool

import (
	"context"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// fakeKernel plays the SIOCETHTOOL side of a driver whose statistics count
// can change between calls, like ENA's when queues or metrics change.
type fakeKernel struct {
	// counts are what GSSET_INFO reports, call by call; the last repeats.
	counts []int
	// actual returns the driver's count at the time of GSTRINGS/GSTATS.
	actual func() int
	// oldKernel writes the driver's count whatever was asked, as kernels
	// before 7b07be1ff1cb do; otherwise a stale count gets len 0.
	oldKernel bool
	// rings, when set, answers GRINGPARAM with the eight sizes of struct
	// ethtool_ringparam in kernel order.
	rings *[8]uint32
	calls map[uint32]int
	// c is the client whose buffers the kernel writes into. A write past
	// their end, which a real kernel would make (corrupting the heap), is
	// refused with EFAULT and counted in overflows.
	c         *client
	overflows int
}

// fits reports whether the client's buffer at data holds size bytes.
func (k *fakeKernel) fits(data unsafe.Pointer, size int) bool {
	var room int
	switch {
	case len(k.c.strBuf) > 0 && data == unsafe.Pointer(&k.c.strBuf[0]):
		room = cap(k.c.strBuf)
	case len(k.c.statBuf) > 0 && data == unsafe.Pointer(&k.c.statBuf[0]):
		room = cap(k.c.statBuf) * 8
	}
	if size > room {
		k.overflows++
		return false
	}
	return true
}

func (k *fakeKernel) ioctl(iface string, data unsafe.Pointer) unix.Errno {
	if iface != "eth0" {
		return unix.ENODEV
	}
	cmd := *(*uint32)(data)
	k.calls[cmd]++
	switch cmd {
	case unix.ETHTOOL_GSSET_INFO:
		si := (*ssetInfo)(data)
		i := min(k.calls[cmd]-1, len(k.counts)-1)
		si.data[0] = uint32(k.counts[i])
	case unix.ETHTOOL_GSTRINGS:
		n := k.actual()
		lenp := (*uint32)(unsafe.Add(data, 8))
		if int(*lenp) != n {
			if !k.oldKernel {
				*lenp = 0
				return 0
			}
			*lenp = uint32(n)
		}
		if !k.fits(data, 12+n*ethGStringLen) {
			return unix.EFAULT
		}
		buf := unsafe.Slice((*byte)(unsafe.Add(data, 12)), n*ethGStringLen)
		for i := range n {
			copy(buf[i*ethGStringLen:], "stat_"+itoa(i)+"\x00")
		}
	case unix.ETHTOOL_GSTATS:
		n := k.actual()
		np := (*uint32)(unsafe.Add(data, 4))
		if int(*np) != n {
			if !k.oldKernel {
				*np = 0
				return 0
			}
			*np = uint32(n)
		}
		if !k.fits(data, 8+n*8) {
			return unix.EFAULT
		}
		vals := unsafe.Slice((*uint64)(unsafe.Add(data, 8)), n)
		for i := range n {
			vals[i] = uint64(100 + i)
		}
	case unix.ETHTOOL_GDRVINFO:
		di := (*unix.EthtoolDrvinfo)(data)
		copy(di.Driver[:], "ena")
	case unix.ETHTOOL_GRINGPARAM:
		if k.rings == nil {
			return unix.EOPNOTSUPP
		}
		*(*[8]uint32)(unsafe.Add(data, 4)) = *k.rings
	default:
		return unix.EOPNOTSUPP
	}
	return 0
}

func fakeClient(k *fakeKernel) *Client {
	k.calls = map[uint32]int{}
	k.c = &client{kernel: k.ioctl}
	return &Client{c: k.c, now: func() (t0 time.Time) { return }}
}

func want(n int) Stats {
	var s Stats
	for i := range n {
		s = append(s, Stat{Name: "stat_" + itoa(i), Value: uint64(100 + i)})
	}
	return s
}

func TestStaleCountIsRequeried(t *testing.T) {
	// GSSET_INFO says 3, but by GSTRINGS the driver has 4: a current kernel
	// answers len 0 without an error, and the read starts over.
	k := &fakeKernel{counts: []int{3, 4}, actual: func() int { return 4 }}
	s, err := fakeClient(k).readStats("eth0")
	require.NoError(t, err)
	assert.Equal(t, want(4), s)
	assert.Equal(t, 2, k.calls[unix.ETHTOOL_GSSET_INFO])
	assert.Equal(t, 2, k.calls[unix.ETHTOOL_GSTRINGS])
	assert.Equal(t, 1, k.calls[unix.ETHTOOL_GSTATS])
}

func TestStaleCountBetweenStringsAndStats(t *testing.T) {
	n := 0
	k := &fakeKernel{counts: []int{5, 6}}
	// The count changes after the first GSTRINGS: GSTATS with 5 is stale.
	k.actual = func() int {
		n++
		if n == 1 {
			return 5
		}
		return 6
	}
	s, err := fakeClient(k).readStats("eth0")
	require.NoError(t, err)
	assert.Equal(t, want(6), s)
	assert.Equal(t, 2, k.calls[unix.ETHTOOL_GSTATS])
}

func TestOldKernelWritingMoreThanAsked(t *testing.T) {
	// An old kernel copies the driver's 40 names whatever was asked for
	// 30: the buffers hold maxStats entries whatever the request, so they
	// land inside them, and the mismatch triggers a re-read.
	k := &fakeKernel{counts: []int{30, 40}, actual: func() int { return 40 }, oldKernel: true}
	s, err := fakeClient(k).readStats("eth0")
	require.NoError(t, err)
	assert.Equal(t, want(40), s)
}

func TestOldKernelENAQueuesGrowMidRead(t *testing.T) {
	// ENA with one queue declares 45 statistics; `ethtool -L eth0
	// combined 8` between GSSET_INFO and GSTRINGS makes it 241, which an
	// old kernel writes whatever was asked: more than any margin over 45
	// (the old n+n/2+64 was 131 entries) and past the end of the buffer.
	k := &fakeKernel{counts: []int{45, 241}, actual: func() int { return 241 }, oldKernel: true}
	s, err := fakeClient(k).readStats("eth0")
	require.NoError(t, err)
	assert.Zero(t, k.overflows, "the kernel wrote past the buffer")
	assert.Equal(t, want(241), s)
	assert.Equal(t, 2, k.calls[unix.ETHTOOL_GSSET_INFO], "the stale count is read again")
}

func TestCountKeepsChanging(t *testing.T) {
	n := 10
	k := &fakeKernel{counts: []int{10}, actual: func() int { n++; return n }}
	_, err := fakeClient(k).readStats("eth0")
	assert.ErrorContains(t, err, "statistics count kept changing")
	assert.Equal(t, maxAttempts, k.calls[unix.ETHTOOL_GSSET_INFO])
}

func TestRingParamsLayout(t *testing.T) {
	// rx_max, rx_mini_max, rx_jumbo_max, tx_max, rx, rx_mini, rx_jumbo, tx.
	k := &fakeKernel{counts: []int{1}, actual: func() int { return 1 }, rings: &[8]uint32{16384, 7, 8, 1024, 8192, 9, 10, 512}}
	r, err := fakeClient(k).RingParams("eth0")
	require.NoError(t, err)
	assert.Equal(t, RingParams{RxMax: 16384, TxMax: 1024, Rx: 8192, Tx: 512}, r)
}

func TestFakeKernelErrors(t *testing.T) {
	k := &fakeKernel{counts: []int{0}, actual: func() int { return 0 }}
	c := fakeClient(k)
	_, err := c.readStats("eth0")
	assert.ErrorIs(t, err, ErrNoStats)
	_, err = c.readStats("eth1")
	assert.ErrorIs(t, err, ErrNoInterface)
	_, err = c.RingParams("eth0")
	assert.ErrorIs(t, err, unix.EOPNOTSUPP)

	k = &fakeKernel{counts: []int{maxStats + 1}, actual: func() int { return 0 }}
	_, err = fakeClient(k).readStats("eth0")
	assert.ErrorContains(t, err, "driver declares 65537 statistics")

	k = &fakeKernel{counts: []int{2}, actual: func() int { return 2 }}
	c = fakeClient(k)
	s, err := c.Snapshot("eth0")
	require.NoError(t, err)
	assert.Equal(t, "ena", s.Driver)
	assert.Equal(t, want(2), s.Stats)
}

func TestWatchAsksDriverInfoOncePerBuffer(t *testing.T) {
	k := &fakeKernel{counts: []int{3}, actual: func() int { return 3 }}
	c := fakeClient(k)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	deltas := 0
	err := c.Watch(ctx, "eth0", &WatchConfig{Interval: time.Millisecond, OnDelta: func(d Delta) {
		assert.Equal(t, "ena", d.Driver)
		assert.Len(t, d.Counters, 3)
		if deltas++; deltas == 5 {
			cancel()
		}
	}})
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 5, deltas)
	assert.Equal(t, 6, k.calls[unix.ETHTOOL_GSTATS], "one statistics read per sample")
	assert.Equal(t, 2, k.calls[unix.ETHTOOL_GDRVINFO], "driver information once for each of the two reused snapshots")
}

func TestSnapshotIntoAsksDriverInfoOnce(t *testing.T) {
	k := &fakeKernel{counts: []int{2}, actual: func() int { return 2 }}
	c := fakeClient(k)
	s := &Snapshot{}
	for range 3 {
		require.NoError(t, c.SnapshotInto("eth0", s))
		assert.Equal(t, "eth0", s.Interface)
		assert.Equal(t, "ena", s.Driver)
		assert.Equal(t, want(2), s.Stats)
	}
	assert.Equal(t, 3, k.calls[unix.ETHTOOL_GSTATS], "one statistics read per call")
	assert.Equal(t, 1, k.calls[unix.ETHTOOL_GDRVINFO], "driver information once while s holds eth0")

	err := c.SnapshotInto("nope0", s)
	require.ErrorIs(t, err, ErrNoInterface)
	assert.Empty(t, s.Interface, "after an error the next call asks for the driver information again")
	require.NoError(t, c.SnapshotInto("eth0", s))
	assert.Equal(t, 2, k.calls[unix.ETHTOOL_GDRVINFO])
	assert.ErrorContains(t, c.SnapshotInto("eth0", nil), "nil *Snapshot s")
}
