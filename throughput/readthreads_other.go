//go:build !linux

package throughput

// readThread is linux-only: elsewhere Config.ReadThreads is ignored and
// every stream reads through the poller.
type readThread struct{}

func (*readThread) wake() {}

func (e *engine) startThreads() {}

func (e *engine) recvThread(*flowStream) {}
