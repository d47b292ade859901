//go:build !linux

package throughput

import (
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"time"
)

// Off linux the kernel interfaces below do not exist (or differ): each
// stub says so in one line, and the caller turns errNotAvailable or false
// into a note on the Result instead of a failure. fallback_others.go holds
// what off-linux platforms do instead.

const (
	affinityAvailable     = false // a test asking for a CPU runs where the OS puts it, with a note
	flowLabelAvailable    = false // only linux has a flow label manager
	dontFragmentAvailable = false
	userTimeoutAvailable  = false
	bindDeviceAvailable   = false
	ledgerAvailable       = false
	tcpInfoAvailable      = false
	sendfileAvailable     = false
	udpFastAvailable      = false
)

// heldSocket, streamThread, udpFast, truncReader and fileSender are
// linux's; their stand-ins hold nothing.
type (
	heldSocket   struct{}
	streamThread struct{}
	udpFast      struct{ gso, gro, stamps bool }
	truncReader  struct{}
	fileSender   struct{}
)

func allowedCPU(int) (int, error)                                                { return 0, nil }
func pinThread(int) (func(), error)                                              { return nil, errNotAvailable }
func labelTCPDial(*Config, *net.Dialer)                                          {}
func labelUDP(*net.UDPConn, *net.UDPAddr, int) (bool, error)                     { return false, nil }
func setBindToDevice(uintptr, string) error                                      { return errNotAvailable }
func setDontFragment(uintptr) error                                              { return errNotAvailable }
func setUserTimeout(uintptr, time.Duration) error                                { return errNotAvailable }
func tcpMSS(uintptr) int                                                         { return 0 }
func holdSocket(net.Conn) *heldSocket                                            { return nil }
func (h *heldSocket) release()                                                   {}
func (h *heldSocket) drops() (int64, bool)                                       { return 0, false }
func (*streamThread) wake()                                                      {}
func (e *engine) startThreads()                                                  {}
func (e *engine) recvThread(*flowStream) error                                   { return nil }
func (e *engine) threadSender(*flowStream) dataSender                            { return dataSender{} }
func (e *engine) threadWriter(*flowStream, []byte) (func() (int, error), func()) { return nil, nil }
func threadOf(net.Conn) *streamThread                                            { return nil }
func returnP()                                                                   {}
func readTCPInfo(net.Conn) (tcpInfo, error)                                      { return tcpInfo{}, errNotAvailable }
func forceBuffers(syscall.Conn, int, int)                                        {}
func socketBuffers(syscall.Conn) (snd, rcv int)                                  { return 0, 0 }
func tcpCongestion(net.Conn) string                                              { return "" }
func newSleeper(quit <-chan struct{}) sleeper                                    { return coarseSleep{quit: quit} }
func setPacingRate(syscall.Conn, float64) error                                  { return errNotAvailable }
func newTruncReader(net.Conn, []byte) (*truncReader, error)                      { return nil, errNotAvailable }
func (*truncReader) read() (int, error)                                          { return 0, errNotAvailable }
func newFileSender(net.Conn, []byte) (*fileSender, error)                        { return nil, errNotAvailable }
func (*fileSender) write() (int, error)                                          { return 0, errNotAvailable }
func (*fileSender) close()                                                       {}
func sendFileAt(syscall.RawConn, *os.File, int64, int) (int, error)              { return 0, errNotAvailable }
func setRcvLowat(syscall.Conn, int) error                                        { return errNotAvailable }
func udpSender(net.Conn, *atomic.Bool) (func([]byte) (int, error), func(), bool) {
	return nil, nil, false
}
func newUDPFast(*net.UDPConn, bool, bool, int) (*udpFast, error) { return nil, errNotAvailable }
func reportLocalDrops(*net.UDPConn)                              {}
func (e *engine) recvUDPFast(*flowStream) error                  { return errNotAvailable }
func enableRxStamps(*net.UDPConn) bool                           { return false }
func (e *engine) recvUDPStamped(*flowStream) error               { return errNotAvailable }
