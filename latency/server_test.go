package latency

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// startServer serves network on a loopback port until the test ends and
// returns the address and the Server.
func startServer(t testing.TB, network string, cfg *ServerConfig) (string, *Server) {
	t.Helper()
	s, err := NewServer(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan net.Addr, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		err := s.ListenAndServe(ctx, network, "127.0.0.1:0", func(a net.Addr) { addrc <- a })
		if err != nil {
			t.Errorf("server: %v", err)
			addrc <- nil
		}
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
	select {
	case a := <-addrc:
		require.NotNil(t, a)
		return a.String(), s
	case <-time.After(5 * time.Second):
		t.Fatal("server did not start")
	}
	return "", nil
}
