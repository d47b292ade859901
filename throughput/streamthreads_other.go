//go:build !linux

package throughput

import "net"

// streamThread is linux-only: elsewhere Config.StreamThreads is ignored and
// every stream reads and writes through the poller.
type streamThread struct{}

func (*streamThread) wake() {}

func (e *engine) startThreads() {}

func (e *engine) recvThread(*flowStream) error { return nil }

func (e *engine) threadSender(*flowStream) dataSender { return dataSender{} }

func (e *engine) threadWriter(*flowStream, []byte) (func() (int, error), func()) { return nil, nil }

func threadOf(net.Conn) *streamThread { return nil }

func returnP() {}
