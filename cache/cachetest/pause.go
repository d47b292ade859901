package cachetest

import (
	"fmt"
	"net"
	"strconv"
	"sync"
)

// Pause stops the node at addr (one of Addrs) with SIGSTOP, the way a
// primary hangs in a failover drill: its kernel still accepts connections
// and buffers requests, but nothing answers them, and after the cluster's
// node timeout its replica is promoted. resume sends SIGCONT; it is
// idempotent and safe for concurrent use. Close ends a paused node too.
// Pause is not available on windows (it returns an error).
func (s *Server) Pause(addr string) (resume func() error, err error) {
	_, ps, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("cachetest: Pause: %w", err)
	}
	port, _ := strconv.Atoi(ps)
	s.mu.Lock()
	var nd *node
	for _, n := range s.nodes {
		if n.port == port {
			nd = n
		}
	}
	closed := s.closed
	s.mu.Unlock()
	if nd == nil || closed {
		return nil, fmt.Errorf("cachetest: Pause: no running node at %s", addr)
	}
	if err := stopProcess(nd.cmd.Process); err != nil {
		return nil, fmt.Errorf("cachetest: Pause %s: %w", addr, err)
	}
	var (
		once sync.Once
		rerr error
	)
	return func() error {
		once.Do(func() {
			if err := continueProcess(nd.cmd.Process); err != nil {
				rerr = fmt.Errorf("cachetest: resume %s: %w", addr, err)
			}
		})
		return rerr
	}, nil
}
