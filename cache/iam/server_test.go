package iam_test

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
	"github.com/netperfkit/netperfkit/cache/iam"
)

// The IAM path end to end against a real server: with a fixed clock the token
// is known in advance, so the server's ACL user gets it as its password and
// AUTH <user> <token> must succeed; a token from another time must not.
func TestIAMAuthAgainstServer(t *testing.T) {
	at := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	cfg := &iam.Config{CacheName: "local-cache", Region: "us-east-1", Serverless: true,
		Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "")}
	ts, err := iam.NewTokenSource(context.Background(), "iam-user", cfg)
	require.NoError(t, err)
	iam.SetClock(ts, func() time.Time { return at })
	tok, err := ts.Token(context.Background())
	require.NoError(t, err)
	require.NotContains(t, tok.Reveal(), " ")

	s := cachetest.NewServer(t, &cachetest.Config{TLS: true, User: "iam-user", Password: tok.Reveal()})
	ep := s.Endpoint()
	ep.User, ep.Password, ep.Credentials = "", "", ts.Credentials
	p, err := cache.NewProber(ep)
	require.NoError(t, err)
	r, err := p.Probe(context.Background())
	require.NoError(t, err)
	assert.Positive(t, r.Phases[cache.PhaseAuth])

	// A fresh source an hour later signs another token, which the server
	// refuses.
	late, err := iam.NewTokenSource(context.Background(), "iam-user", cfg)
	require.NoError(t, err)
	iam.SetClock(late, func() time.Time { return at.Add(time.Hour) })
	ep.Credentials = late.Credentials
	p, err = cache.NewProber(ep)
	require.NoError(t, err)
	_, err = p.Probe(context.Background())
	require.ErrorIs(t, err, cache.ErrWrongPass)
	assert.False(t, strings.Contains(err.Error(), "X-Amz-Signature"), "the token never appears in errors")
}
