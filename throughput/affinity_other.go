//go:build !linux

package throughput

// affinityAvailable is false: a server here runs a test that asks for a
// CPU (Config.ServerAffinity) where the OS puts it, with a note.
const affinityAvailable = false

func allowedCPU(int) (int, error) { return 0, nil }

func pinThread(int) (func(), error) { return nil, ErrNotAvailable }
