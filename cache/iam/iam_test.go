package iam

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/cache"
)

// expectedToken computes the presigned token by following AWS's documented
// SigV4 query-string signing steps by hand, independently of the SDK signer.
func expectedToken(t *testing.T, cache, user, region, akid, secret, session string, serverless bool, at time.Time) string {
	t.Helper()
	amzDate := at.UTC().Format("20060102T150405Z")
	day := at.UTC().Format("20060102")
	scope := day + "/" + region + "/elasticache/aws4_request"
	params := map[string]string{
		"Action":              "connect",
		"User":                user,
		"X-Amz-Algorithm":     "AWS4-HMAC-SHA256",
		"X-Amz-Credential":    akid + "/" + scope,
		"X-Amz-Date":          amzDate,
		"X-Amz-Expires":       "900",
		"X-Amz-SignedHeaders": "host",
	}
	if serverless {
		params["ResourceType"] = "ServerlessCache"
	}
	if session != "" {
		params["X-Amz-Security-Token"] = session
	}
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sortStrings(keys)
	var cq []string
	for _, k := range keys {
		// AWS URI-encodes everything but unreserved characters, spaces as %20.
		cq = append(cq, awsEscape(k)+"="+awsEscape(params[k]))
	}
	canonicalQuery := strings.Join(cq, "&")
	canonicalRequest := strings.Join([]string{
		"GET", "/", canonicalQuery, "host:" + cache + "\n", "host", emptyPayloadHash,
	}, "\n")
	crHash := sha256.Sum256([]byte(canonicalRequest))
	stringToSign := strings.Join([]string{"AWS4-HMAC-SHA256", amzDate, scope, hex.EncodeToString(crHash[:])}, "\n")
	mac := func(key []byte, msg string) []byte {
		h := hmac.New(sha256.New, key)
		h.Write([]byte(msg))
		return h.Sum(nil)
	}
	k := mac([]byte("AWS4"+secret), day)
	k = mac(k, region)
	k = mac(k, "elasticache")
	k = mac(k, "aws4_request")
	sig := hex.EncodeToString(mac(k, stringToSign))
	return cache + "/?" + canonicalQuery + "&X-Amz-Signature=" + sig
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

func awsEscape(s string) string {
	return strings.ReplaceAll(url.QueryEscape(s), "+", "%20")
}

func parseQuery(t *testing.T, tok string) url.Values {
	t.Helper()
	_, q, ok := strings.Cut(tok, "?")
	require.True(t, ok)
	v, err := url.ParseQuery(q)
	require.NoError(t, err)
	return v
}

func TestIAMTokenMatchesIndependentSigV4(t *testing.T) {
	at := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name       string
		serverless bool
		session    string
	}{
		{"node-based", false, ""},
		{"serverless", true, ""},
		{"session token", true, "FQoGZXIvYXdzEBYaDExample/Token+With=Chars"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, err := NewTokenSource(context.Background(), "iam-user-01", &Config{
				CacheName:   "My-Cache",
				Region:      "us-east-1",
				Serverless:  tc.serverless,
				Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", tc.session),
			})
			require.NoError(t, err)
			src.now = func() time.Time { return at }
			tok, err := src.Token(context.Background())
			require.NoError(t, err)
			want := expectedToken(t, "my-cache", "iam-user-01", "us-east-1", "AKIDEXAMPLE",
				"wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", tc.session, tc.serverless, at)
			// Parameter order in the SDK's URL may differ from the canonical
			// order; compare host, parameters and signature.
			gotQ, wantQ := parseQuery(t, tok.Reveal()), parseQuery(t, want)
			assert.Equal(t, wantQ, gotQ)
			assert.True(t, strings.HasPrefix(tok.Reveal(), "my-cache/?"), "no scheme, lower-case host")
			if tc.serverless {
				assert.Equal(t, "ServerlessCache", gotQ.Get("ResourceType"))
			} else {
				assert.Empty(t, gotQ.Get("ResourceType"))
			}
		})
	}
}

// The signature must change with the secret key: a test that compares a value
// with itself could not fail.
func TestIAMTokenSignatureDependsOnSecret(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a := expectedToken(t, "c", "u", "eu-west-1", "AKID", "secret-a", "", false, at)
	b := expectedToken(t, "c", "u", "eu-west-1", "AKID", "secret-b", "", false, at)
	require.NotEqual(t, parseQuery(t, a).Get("X-Amz-Signature"), parseQuery(t, b).Get("X-Amz-Signature"))
}

type countingCreds struct {
	n int
	aws.CredentialsProvider
}

func (c *countingCreds) Retrieve(ctx context.Context) (aws.Credentials, error) {
	c.n++
	return c.CredentialsProvider.Retrieve(ctx)
}

func TestIAMTokenRefresh(t *testing.T) {
	creds := &countingCreds{CredentialsProvider: credentials.NewStaticCredentialsProvider("AKID", "SECRET", "")}
	src, err := NewTokenSource(context.Background(), "u", &Config{CacheName: "c", Region: "us-west-2", Credentials: creds})
	require.NoError(t, err)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	src.now = func() time.Time { return now }
	t1, err := src.Token(context.Background())
	require.NoError(t, err)
	now = now.Add(9 * time.Minute)
	t2, err := src.Token(context.Background())
	require.NoError(t, err)
	assert.Equal(t, t1, t2, "cached while younger than the refresh age")
	assert.Equal(t, 1, creds.n)
	now = now.Add(2 * time.Minute) // 11 min: due, still before the 15 min expiry
	t3, err := src.Token(context.Background())
	require.NoError(t, err)
	assert.NotEqual(t, t1.Reveal(), t3.Reveal())
	assert.Equal(t, 2, creds.n)
	assert.Equal(t, "20260101T001100Z", parseQuery(t, t3.Reveal()).Get("X-Amz-Date"))
}

// expiringCreds hands out temporary credentials that expire ttl after the
// test clock's now.
type expiringCreds struct {
	n   int
	now *time.Time
	ttl time.Duration
}

func (c *expiringCreds) Retrieve(context.Context) (aws.Credentials, error) {
	c.n++
	return aws.Credentials{AccessKeyID: "ASIAEXAMPLE", SecretAccessKey: "SECRET", SessionToken: fmt.Sprint("session-", c.n),
		CanExpire: true, Expires: c.now.Add(c.ttl)}, nil
}

// A token signed with temporary credentials is replaced once they expire,
// even while it is younger than the refresh age.
func TestIAMTokenReplacedWhenCredentialsExpire(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	creds := &expiringCreds{now: &now, ttl: 6 * time.Minute}
	src, err := NewTokenSource(context.Background(), "u", &Config{CacheName: "c", Region: "us-west-2", Credentials: creds})
	require.NoError(t, err)
	src.now = func() time.Time { return now }
	t1, err := src.Token(context.Background())
	require.NoError(t, err)
	now = now.Add(4 * time.Minute)
	t2, err := src.Token(context.Background())
	require.NoError(t, err)
	assert.Equal(t, t1, t2, "cached while its credentials are valid")
	assert.Equal(t, 1, creds.n)

	// 5.5 min: the credentials expire at 6, within the minute's margin (a
	// token handed out now would reach AUTH expired); the token is only
	// 5.5 min old.
	now = now.Add(90 * time.Second)
	t3, err := src.Token(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 2, creds.n, "fresh credentials retrieved")
	assert.NotEqual(t, t1.Reveal(), t3.Reveal())
	assert.Equal(t, "session-2", parseQuery(t, t3.Reveal()).Get("X-Amz-Security-Token"))

	now = now.Add(4 * time.Minute) // the new credentials are valid until 11.5 min
	t4, err := src.Token(context.Background())
	require.NoError(t, err)
	assert.Equal(t, t3, t4)
	assert.Equal(t, 2, creds.n)
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		ctx  context.Context
		user string
		cfg  *Config
		want string
	}{
		{nil, "u", &Config{CacheName: "c", Region: "r"}, "context"},
		{context.Background(), "u", nil, "nil Config"},
		{context.Background(), "u", &Config{}, "Config.CacheName"},
		{context.Background(), "", &Config{CacheName: "c", Region: "r"}, "user"},
		{context.Background(), "u", &Config{CacheName: "c", Region: "r", Refresh: -time.Second}, "Config.Refresh -1s is negative"},
		{context.Background(), "u", &Config{CacheName: "c", Region: "r", Refresh: 15 * time.Minute}, "Config.Refresh 15m0s is not below the tokens' lifetime of 15m0s"},
	} {
		_, err := NewTokenSource(tc.ctx, tc.user, tc.cfg)
		require.ErrorIs(t, err, errToken)
		assert.ErrorContains(t, err, tc.want)
	}
	var zero TokenSource
	_, err := zero.Token(context.Background())
	require.ErrorIs(t, err, errToken)
	_, _, err = (*TokenSource)(nil).Credentials(context.Background())
	require.ErrorIs(t, err, errToken)
	assert.Equal(t, "TokenSource(nil)", (*TokenSource)(nil).String())
}

// slogged logs the values through a handler of log/slog and returns the line.
func slogged[H slog.Handler](newHandler func(io.Writer, *slog.HandlerOptions) H, vals ...any) string {
	var b bytes.Buffer
	slog.New(newHandler(&b, nil)).Info("x", "v", vals)
	return b.String()
}

// No secret of an endpoint (password, AWS secret key, session token, IAM
// token) shows through json, slog's text and JSON handlers, or any fmt verb,
// whether the Endpoint, its Config or the token source is printed, by
// value or by pointer.
func TestEndpointSecretsNeverPrinted(t *testing.T) {
	const (
		password = "pw-hunter2"
		akid     = "AKIDEXAMPLE"
		secret   = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
		session  = "FQoGZXIvYXdzSessionTokenExample"
	)
	iam := &Config{CacheName: "c", Region: "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider(akid, secret, session)}
	src, err := NewTokenSource(context.Background(), "app", iam)
	require.NoError(t, err)
	ep := cache.Endpoint{Addr: "c.example:6379", TLS: true, User: "app", Password: password, Credentials: src.Credentials}
	tok, err := src.Token(context.Background())
	require.NoError(t, err)
	sig := parseQuery(t, tok.Reveal()).Get("X-Amz-Signature")
	require.NotEmpty(t, sig)

	var outs []string
	for _, v := range []any{ep, &ep, *iam, iam, src} {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%d"} {
			outs = append(outs, fmt.Sprintf(verb, v))
		}
		b, err := json.Marshal(v)
		if _, isSrc := v.(*TokenSource); !isSrc {
			require.NoError(t, err)
		}
		outs = append(outs, string(b))
		outs = append(outs, slogged(slog.NewTextHandler, v), slogged(slog.NewJSONHandler, v))
		var tb, jb bytes.Buffer
		slog.New(slog.NewTextHandler(&tb, nil)).Info("x", "v", v)
		slog.New(slog.NewJSONHandler(&jb, nil)).Info("x", "v", v)
		outs = append(outs, tb.String(), jb.String())
	}
	for _, out := range outs {
		for _, s := range []string{password, secret, session, sig, tok.Reveal()} {
			require.NotContains(t, out, s)
			require.NotContains(t, out, hex.EncodeToString([]byte(s)))
		}
	}
	// What is shown still says what the configuration is.
	b, err := json.Marshal(iam)
	require.NoError(t, err)
	assert.JSONEq(t, `{"CacheName":"c","Region":"us-east-1","Serverless":false,"Refresh":0,"Credentials":"[redacted]"}`, string(b))
	assert.Contains(t, fmt.Sprintf("%+v", iam), "Region:us-east-1")
	assert.Contains(t, fmt.Sprintf("%#v", *iam), `Credentials:"[redacted]"`)
	assert.Contains(t, ep.String(), "auth=credentials")
	user, pw, err := src.Credentials(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "app", user)
	assert.Equal(t, tok, pw, "Credentials hands out the cached token")
}
