//go:build !linux

package latency

import "context"

// serveRaw declines where no blocking loop is wired up: ServePacket then
// serves through the netpoller.
func (p *packetLoop) serveRaw(context.Context) (bool, error) { return false, nil }
