//go:build !linux

package throughput

import "net"

// flowLabelAvailable is false: only linux has a flow label manager; a test
// with Config.FlowLabel runs without it and says so in a note.
const flowLabelAvailable = false

func labelTCPDial(*Config, *net.Dialer) {}

func labelUDP(*net.UDPConn, *net.UDPAddr, int) (bool, error) { return false, nil }
