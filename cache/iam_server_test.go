package cache

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/cache/cachetest"
)

// The IAM path end to end against a real server: with a fixed clock the token
// is known in advance, so the server's ACL user gets it as its password and
// AUTH <user> <token> must succeed; a token from another time must not.
func TestIAMAuthAgainstServer(t *testing.T) {
	at := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	iam := &IAMConfig{CacheName: "local-cache", Region: "us-east-1", Serverless: true,
		Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "")}
	src, err := NewIAMTokenSource(context.Background(), "iam-user", iam)
	require.NoError(t, err)
	src.now = func() time.Time { return at }
	tok, err := src.Token(context.Background())
	require.NoError(t, err)
	require.NotContains(t, tok.Reveal(), " ")

	s := cachetest.NewServer(t, &cachetest.Config{TLS: true, User: "iam-user", Password: tok.Reveal()})
	probe := func(clock time.Time) (*ProbeResult, error) {
		d, err := newDialer(context.Background(), &Endpoint{Addr: s.Addr, TLS: true, CACertPEM: s.CACertPEM, User: "iam-user", IAM: iam})
		require.NoError(t, err)
		d.tokens.now = func() time.Time { return clock }
		return (&Prober{d: d}).Probe(context.Background())
	}
	r, err := probe(at)
	require.NoError(t, err)
	assert.Positive(t, r.Auth)

	_, err = probe(at.Add(time.Hour))
	require.ErrorIs(t, err, ErrWrongPass)
	assert.False(t, strings.Contains(err.Error(), "X-Amz-Signature"), "the token never appears in errors")
}

// A trace in Run's context sees every operation of the resp engine.
func TestRunRespCallsTrace(t *testing.T) {
	s := cachetest.NewPlain(t)
	var cmds, conns int
	tr := &ClientTrace{
		CommandDone: func(PhaseDone) { cmds++ }, // one worker: no concurrency
		ConnectDone: func(PhaseDone) { conns++ },
	}
	r, err := Run(WithClientTrace(context.Background(), tr), &Endpoint{Addr: s.Addr},
		&WorkloadConfig{Engine: EngineResp, Mode: ModeConnect, Workers: 1, Duration: 100 * time.Millisecond})
	require.NoError(t, err)
	require.Positive(t, r.Attempts)
	assert.Equal(t, int(r.Attempts), cmds)
	assert.Equal(t, int(r.Attempts)+1, conns, "one connection per operation, plus the endpoint check")
}
