package peertest

import (
	"bytes"
	"sync"
)

// Buffer collects output written in the background, by a peer process
// (exec.Cmd's Stdout and Stderr) or a server under test, while the test reads
// it: a bytes.Buffer that is safe for concurrent Write and String.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
