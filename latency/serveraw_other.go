//go:build !linux

package latency

import (
	"context"
	"io"
	"net"
)

// serveRaw declines where no blocking loop is wired up: ServePacket then
// serves through the netpoller.
func (p *packetLoop) serveRaw(context.Context) (bool, error) { return false, nil }

// rawStream is linux's; elsewhere connections go through the netpoller.
type rawStream struct{}

func rawStreamOf(*net.TCPConn, *ServerConfig) *rawStream { return nil }

func (*rawStream) Read([]byte) (int, error) { return 0, io.EOF }
func (*rawStream) write([]byte) error       { return nil }
func (*rawStream) shutdown()                {}
func (*rawStream) close()                   {}
