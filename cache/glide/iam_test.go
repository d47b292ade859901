package glide_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/cache/cachetest"
	"github.com/netperfkit/netperfkit/cache/glide"
)

// admin sends commands as the server's ACL user over TLS and returns the
// first line of each reply.
func admin(t *testing.T, s *cachetest.Server, user, pw string, cmds ...string) []string {
	t.Helper()
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(s.Endpoint().CACertPEM))
	c, err := tls.Dial("tcp", s.Addr, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12})
	require.NoError(t, err)
	defer c.Close()
	r := bufio.NewReader(c)
	var out []string
	for _, cmd := range append([]string{"AUTH " + user + " " + pw}, cmds...) {
		_, err := fmt.Fprintf(c, "%s\r\n", cmd)
		require.NoError(t, err)
		line, err := r.ReadString('\n')
		require.NoError(t, err)
		out = append(out, strings.TrimSpace(line))
	}
	return out
}

// TestGlideServerlessIAMToken: with Endpoint.Credentials (a serverless
// cache's IAM tokens), glide gets the current token as its password, and a
// client is handed the next token before the first one is withdrawn: after the server stops
// accepting the first token and drops the client's connections, the
// client reconnects with the second.
func TestGlideServerlessIAMToken(t *testing.T) {
	s := cachetest.NewServer(t, &cachetest.Config{TLS: true, User: "iam-user", Password: "token-1"})
	admin(t, s, "iam-user", "token-1", "ACL SETUSER iam-user >token-2")

	var rotated atomic.Bool
	refreshedCh := make(chan struct{}, 1)
	token := func(context.Context) (string, cache.Secret, error) {
		if rotated.Load() {
			return "iam-user", "token-2", nil
		}
		return "iam-user", "token-1", nil
	}
	restore := glide.SetCredentialsPoll(50*time.Millisecond, func() {
		select {
		case refreshedCh <- struct{}{}:
		default:
		}
	})
	defer restore()

	ep := s.Endpoint()
	ep.User, ep.Password, ep.Credentials = "", "", token
	ep.ConnectTimeout, ep.RequestTimeout = 5*time.Second, 5*time.Second
	ctx := context.Background()
	newClient, err := glide.Engine().Open(ctx, ep)
	require.NoError(t, err)
	c, err := newClient(ctx)
	require.NoError(t, err, "the first token is the password")
	defer c.Close()
	require.NoError(t, c.Set(ctx, "k", "v"))

	rotated.Store(true)
	select {
	case <-refreshedCh:
	case <-time.After(10 * time.Second):
		t.Fatal("the client never took the second token")
	}
	// The first token expires: the server forgets it and drops the client.
	replies := admin(t, s, "iam-user", "token-2", "ACL SETUSER iam-user <token-1", "CLIENT KILL USER iam-user")
	require.Equal(t, "+OK", replies[1])
	deadline := time.Now().Add(10 * time.Second)
	for {
		err = c.Get(ctx, "k")
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	require.NoError(t, err, "the client reconnected with the refreshed token")

	// A new client signs with the current token.
	c2, err := newClient(ctx)
	require.NoError(t, err)
	c2.Close()
}
