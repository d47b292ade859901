package ethtool

import (
	"errors"
	"syscall"
	"time"
)

// driverInfo is what ETHTOOL_GDRVINFO reports, as `ethtool -i` prints it;
// a Snapshot carries it.
type driverInfo struct {
	Driver, Version, FirmwareVersion, BusInfo string
	// NStats is the number of statistics the driver declared when asked.
	NStats uint32
}

// RingParams are the descriptor ring sizes of ETHTOOL_GRINGPARAM
// (`ethtool -g`): the current size and the maximum the device allows, for
// the receive and transmit rings. (The legacy mini and jumbo receive rings
// are left out: no current driver of interest has them.)
type RingParams struct {
	RxMax uint32 `json:"rx_max"`
	TxMax uint32 `json:"tx_max"`
	Rx    uint32 `json:"rx"`
	Tx    uint32 `json:"tx"`
}

// Client reads driver statistics, driver information and ring sizes through
// the SIOCETHTOOL ioctl, without running the ethtool binary and without
// CAP_NET_ADMIN. It sees the interfaces of the network namespace the calling
// thread was in when New ran. It keeps its buffers between calls, so repeated
// reads of the same interface allocate little. A Client is safe for
// concurrent use.
//
// Errors name the operation and the interface ("ethtool: GSTATS eth0: ...")
// and match, with errors.Is: os.ErrNotExist for a missing interface (also
// ErrNoInterface), an interface without statistics (also ErrNoStats) and a
// driver that does not implement the operation; os.ErrPermission for EPERM
// and EACCES; and the syscall.Errno of the ioctl. On systems other than
// linux every method returns an error matching errors.ErrUnsupported. The
// methods of a nil or zero Client (one not made by New) return an error, and
// its reads after Close return "ethtool: client is closed", which matches
// os.ErrClosed.
type Client struct {
	c *client
	// now is the clock seam for tests.
	now func() time.Time
}

// New opens a Client. Close it when done. On systems other than linux it
// returns an error matching errors.ErrUnsupported.
func New() (*Client, error) {
	c, err := newClient()
	if err != nil {
		return nil, err
	}
	return &Client{c: c, now: time.Now}, nil
}

// errNoClient is what the methods of a nil or zero Client return.
var errNoClient = errors.New("ethtool: nil or zero *Client: open one with New")

// check guards every method: a Client not made by New has no socket.
func (c *Client) check() error {
	if c == nil || c.c == nil {
		return errNoClient
	}
	return nil
}

// Close releases the Client's socket. Closing twice is not an error.
func (c *Client) Close() error {
	if err := c.check(); err != nil {
		return err
	}
	return c.c.close()
}

// readStats reads the driver statistics of iface (ETHTOOL_GSSET_INFO,
// ETHTOOL_GSTRINGS, ETHTOOL_GSTATS), as Snapshot does without the driver
// information.
func (c *Client) readStats(iface string) (Stats, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	return c.c.stats(iface, nil)
}

// RingParams reads ETHTOOL_GRINGPARAM. A driver that does not report ring
// sizes (veth, for one) gives an error matching os.ErrNotExist.
func (c *Client) RingParams(iface string) (RingParams, error) {
	if err := c.check(); err != nil {
		return RingParams{}, err
	}
	return c.c.ringParams(iface)
}

// Snapshot reads the driver information and statistics of iface and stamps
// them with the current time (ETHTOOL_GDRVINFO gives the driver fields; a
// driver that does not answer it leaves them empty). The statistics come
// from ETHTOOL_GSSET_INFO, ETHTOOL_GSTRINGS and ETHTOOL_GSTATS; when the
// driver's count changes between those calls the read starts over. Errors:
// an interface without statistics matches ErrNoStats and os.ErrNotExist; a
// missing interface matches ErrNoInterface and os.ErrNotExist.
// The Snapshot is never nil: after an error it is empty (no interface, no
// statistics, no time), as docs/conventions.md says of results.
func (c *Client) Snapshot(iface string) (*Snapshot, error) {
	s := &Snapshot{}
	if err := c.check(); err != nil {
		return s, err
	}
	if err := c.snapshotInto(iface, s, true); err != nil {
		return &Snapshot{}, err
	}
	return s, nil
}

// SnapshotInto is Snapshot into s, for a program that samples often: it
// reuses the memory of s.Stats and reads the driver information only when s
// is not already a snapshot of iface (it cannot change while the interface
// exists). After an error s holds no snapshot. It returns the errors of
// Snapshot, and an error for a nil s.
func (c *Client) SnapshotInto(iface string, s *Snapshot) error {
	if err := c.check(); err != nil {
		return err
	}
	if s == nil {
		return errors.New("ethtool: SnapshotInto: nil *Snapshot s")
	}
	if err := c.snapshotInto(iface, s, s.Interface != iface); err != nil {
		s.Interface = "" // the next call asks for the driver information again
		return err
	}
	return nil
}

// snapshotInto fills s, reusing the capacity of s.Stats, and with
// withDriver also its driver fields (otherwise they keep what s holds).
// Statistics come first so that an interface without them gives that error;
// a driver that does not answer GDRVINFO leaves the driver fields empty.
func (c *Client) snapshotInto(iface string, s *Snapshot, withDriver bool) error {
	st, err := c.c.stats(iface, s.Stats[:0])
	if err != nil {
		return err
	}
	if withDriver {
		di, err := c.c.driverInfo(iface)
		if err != nil && !errors.Is(err, syscall.EOPNOTSUPP) {
			return err
		}
		s.Driver = di.Driver
		s.DriverVersion = di.Version
		s.FirmwareVersion = di.FirmwareVersion
		s.BusInfo = di.BusInfo
	}
	s.Time = c.now()
	s.Interface = iface
	s.Stats = st
	return nil
}

// ReadSnapshot opens a Client, takes one Snapshot of iface and closes it. A
// program that reads repeatedly should keep a Client (or use Watch). As with
// Snapshot, the result is never nil: after an error it is empty.
func ReadSnapshot(iface string) (*Snapshot, error) {
	c, err := New()
	if err != nil {
		return &Snapshot{}, err
	}
	defer c.Close()
	return c.Snapshot(iface)
}
