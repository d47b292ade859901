package cache_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/cache/cachetest"
)

// The IAM path end to end against a real server: with a fixed clock the token
// is known in advance, so the server's ACL user gets it as its password and
// AUTH <user> <token> must succeed; a token from another time must not.
func TestIAMAuthAgainstServer(t *testing.T) {
	at := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	iam := &cache.IAMConfig{CacheName: "local-cache", Region: "us-east-1", Serverless: true,
		Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "")}
	tok, err := cache.TokenAt(context.Background(), "iam-user", iam, at)
	require.NoError(t, err)
	require.NotContains(t, tok.Reveal(), " ")

	s := cachetest.NewServer(t, &cachetest.Config{TLS: true, User: "iam-user", Password: tok.Reveal()})
	ep := s.Endpoint()
	ep.Password, ep.IAM = "", iam
	r, err := cache.ProbeAt(context.Background(), ep, at)
	require.NoError(t, err)
	assert.Positive(t, r.Phases[cache.PhaseAuth])

	_, err = cache.ProbeAt(context.Background(), ep, at.Add(time.Hour))
	require.ErrorIs(t, err, cache.ErrWrongPass)
	assert.False(t, strings.Contains(err.Error(), "X-Amz-Signature"), "the token never appears in errors")
}

// A trace in Run's context sees every operation of the resp engine.
func TestRunRespCallsTrace(t *testing.T) {
	s := cachetest.NewServer(t, nil)
	var cmds, conns int
	tr := &cache.ClientTrace{Done: func(i cache.PhaseInfo) { // one worker: no concurrency
		switch i.Phase {
		case cache.PhaseCommand:
			cmds++
		case cache.PhaseConnect:
			conns++
		}
	}}
	r, err := cache.Run(cache.WithClientTrace(context.Background(), tr), &cache.Endpoint{Addr: s.Addr},
		&cache.WorkloadConfig{Mode: cache.ModeConnect, Workers: 1, Duration: 100 * time.Millisecond})
	require.NoError(t, err)
	require.Positive(t, r.Attempts)
	assert.Equal(t, int(r.Attempts), cmds)
	assert.Equal(t, int(r.Attempts)+1, conns, "one connection per operation, plus the endpoint check")
}

// The resp engine follows MOVED redirects and corrects its slot map.
func TestRespClientFollowsMoved(t *testing.T) {
	s := cachetest.NewServer(t, &cachetest.Config{Cluster: true})
	cache.CheckRespClientFollowsMoved(t, s.Addrs)
}
