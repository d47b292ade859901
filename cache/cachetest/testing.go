package cachetest

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/netperfkit/netperfkit/internal/peertest"
)

// NewServer starts a server for a test and stops it with tb.Cleanup. When no
// server binary is on PATH it skips the test, or fails it when
// NETPERFKIT_REQUIRE_PEERS=1; any other start-up failure fails the test.
func NewServer(tb testing.TB, cfg *Config) *Server {
	tb.Helper()
	explicit := (cfg != nil && cfg.Binary != "") || os.Getenv(serverEnv) != ""
	if !explicit {
		peertest.Binary(tb, installHint, "valkey-server", "redis-server")
	}
	if cfg != nil && cfg.Cluster && !explicit {
		peertest.Binary(tb, installHint, "valkey-cli", "redis-cli")
	}
	s, err := Start(context.Background(), cfg)
	if errors.Is(err, ErrNoServer) {
		peertest.Missing(tb, err.Error(), installHint)
		return nil
	}
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Error(err)
		}
	})
	return s
}
