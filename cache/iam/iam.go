// Package iam signs ElastiCache IAM authentication tokens for package cache:
// a TokenSource presigns a token (SigV4 over an empty GET of the cache's
// name) with AWS credentials and caches it until it is due for refresh.
// Its Credentials method is what cache.Endpoint.Credentials takes:
//
//	ts, err := iam.NewTokenSource(ctx, "my-iam-user", &iam.Config{CacheName: "my-cache", Region: "us-east-1"})
//	ep := &cache.Endpoint{Addr: addr, TLS: true, Credentials: ts.Credentials}
//
// This is the only netperfkit package that imports the AWS SDK for Go v2
// (aws, aws/signer/v4 and config, for the default credential chain), so
// that importing cache pulls none of it. Tokens and AWS credentials are
// never printed, logged or marshalled: Config and TokenSource redact them
// in every fmt verb, in log/slog and in JSON. See docs/conventions.md for
// the conventions netperfkit's packages share.
package iam

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"

	"github.com/netperfkit/netperfkit/cache"
)

// errToken is wrapped by every failure to make a token (configuration,
// credentials, signing).
var errToken = errors.New("iam: token")

// redacted is what is shown in place of credentials.
const redacted = "[redacted]"

// emptyPayloadHash is the hex SHA-256 of an empty body, which a presigned GET
// signs.
const emptyPayloadHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// Config describes ElastiCache IAM authentication of one user on one cache.
type Config struct {
	// CacheName is the replication group id or serverless cache name (not the
	// endpoint host). It is lower-cased, as ElastiCache expects.
	CacheName string
	// Region is the cache's AWS region, for example "us-east-1". Empty means
	// the region of the default configuration (AWS_REGION, profile).
	Region string
	// Serverless adds ResourceType=ServerlessCache, which serverless caches
	// require and node-based caches reject.
	Serverless bool
	// Credentials supplies AWS credentials. Nil means the standard chain of
	// aws-sdk-go-v2's config.LoadDefaultConfig (environment, shared files, SSO,
	// web identity, container and instance roles). A provider may hold its
	// secret key in exported fields (credentials.StaticCredentialsProvider
	// does), so it is never printed, logged or marshalled: Config's
	// Format, LogValue and MarshalJSON show only whether it is set.
	Credentials aws.CredentialsProvider `json:"-"`
	// Refresh is the age at which a token is replaced by a fresh one. Zero
	// means 10 minutes; tokens are valid for 15, so it must be below that.
	Refresh time.Duration
}

// credentialsShown is what Config shows of its Credentials.
func (c Config) credentialsShown() string {
	if c.Credentials == nil {
		return "default"
	}
	return redacted
}

// Format implements fmt.Formatter: every verb (%v, %+v, %#v, %s...) shows
// the configuration with its credentials redacted.
func (c Config) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		_, _ = fmt.Fprintf(f, "iam.Config{CacheName:%q, Region:%q, Serverless:%t, Credentials:%q, Refresh:%d}",
			c.CacheName, c.Region, c.Serverless, c.credentialsShown(), int64(c.Refresh))
		return
	}
	_, _ = fmt.Fprintf(f, "{CacheName:%s Region:%s Serverless:%t Credentials:%s Refresh:%s}",
		c.CacheName, c.Region, c.Serverless, c.credentialsShown(), c.Refresh)
}

// LogValue implements slog.LogValuer with the credentials redacted.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(slog.String("cache_name", c.CacheName), slog.String("region", c.Region),
		slog.Bool("serverless", c.Serverless), slog.String("credentials", c.credentialsShown()),
		slog.Duration("refresh", c.Refresh))
}

// MarshalJSON implements json.Marshaler: the fields by their names, and
// Credentials as "[redacted]" when set ("default" when nil).
func (c Config) MarshalJSON() ([]byte, error) {
	type plain Config // without the methods; Credentials stays json:"-"
	return json.Marshal(struct {
		plain
		Credentials string
	}{plain(c), c.credentialsShown()})
}

// tokenLifetime is the X-Amz-Expires of the token: ElastiCache accepts 15 min.
const tokenLifetime = 900 * time.Second

// TokenSource presigns ElastiCache IAM auth tokens and caches each one until
// it is due for refresh. It is safe for concurrent use. Create one with
// NewTokenSource; the zero value has no cache or user and its Token returns
// an error.
type TokenSource struct {
	user, cacheName, region string
	serverless              bool
	creds                   aws.CredentialsProvider
	refresh                 time.Duration
	signer                  *v4.Signer
	now                     func() time.Time // clock seam for tests

	mu      sync.Mutex
	token   cache.Secret
	created time.Time
	// expires is when the credentials the token was signed with expire;
	// zero when they do not.
	expires time.Time
}

// NewTokenSource returns a token source for user (the IAM-enabled user id)
// on the cache described by cfg. With cfg.Credentials nil it loads the
// default AWS configuration, which reads the environment and files but makes
// no network call.
func NewTokenSource(ctx context.Context, user string, cfg *Config) (*TokenSource, error) {
	if ctx == nil {
		return nil, fmt.Errorf("%w: nil context", errToken)
	}
	if cfg == nil {
		return nil, fmt.Errorf("%w: nil Config", errToken)
	}
	if cfg.CacheName == "" {
		return nil, fmt.Errorf("%w: Config.CacheName is required", errToken)
	}
	if cfg.Refresh < 0 {
		return nil, fmt.Errorf("%w: Config.Refresh %v is negative", errToken, cfg.Refresh)
	}
	if cfg.Refresh >= tokenLifetime {
		// A token kept that long would be handed out after it expired.
		return nil, fmt.Errorf("%w: Config.Refresh %v is not below the tokens' lifetime of %v", errToken, cfg.Refresh, tokenLifetime)
	}
	if user == "" {
		return nil, fmt.Errorf("%w: user id is required", errToken)
	}
	s := &TokenSource{
		user:       user,
		cacheName:  strings.ToLower(cfg.CacheName),
		region:     cfg.Region,
		serverless: cfg.Serverless,
		creds:      cfg.Credentials,
		refresh:    cfg.Refresh,
		signer:     v4.NewSigner(),
		now:        time.Now,
	}
	if s.refresh <= 0 || s.refresh >= tokenLifetime {
		s.refresh = 10 * time.Minute
	}
	if s.creds == nil || s.region == "" {
		ac, err := awsconfig.LoadDefaultConfig(ctx)
		if err != nil {
			return nil, fmt.Errorf("%w: load AWS configuration: %w", errToken, err)
		}
		if s.creds == nil {
			s.creds = ac.Credentials
		}
		if s.region == "" {
			s.region = ac.Region
		}
	}
	if s.region == "" {
		return nil, fmt.Errorf("%w: no region (set Config.Region or AWS_REGION)", errToken)
	}
	if s.creds == nil {
		return nil, fmt.Errorf("%w: no AWS credentials provider", errToken)
	}
	return s, nil
}

// Credentials returns the user id and a valid token, as
// cache.Endpoint.Credentials wants them: set ep.Credentials = ts.Credentials
// (with ep.TLS, which ElastiCache requires for IAM).
func (s *TokenSource) Credentials(ctx context.Context) (user string, password cache.Secret, err error) {
	tok, err := s.Token(ctx)
	if err != nil {
		return "", "", err
	}
	return s.user, tok, nil
}

// String describes the source without any secret.
func (s *TokenSource) String() string {
	if s == nil {
		return "TokenSource(nil)"
	}
	return fmt.Sprintf("TokenSource{user=%s cache=%s region=%s serverless=%t}", s.user, s.cacheName, s.region, s.serverless)
}

// Format implements fmt.Formatter so that every verb, %#v included (which
// would otherwise print the cached token and the credentials provider
// field by field), shows String.
func (s *TokenSource) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(s.String())) }

// LogValue implements slog.LogValuer as String.
func (s *TokenSource) LogValue() slog.Value { return slog.StringValue(s.String()) }

// Token returns a valid token, presigning a new one when none is cached, the
// cached one is older than the refresh age, or the credentials it was signed
// with have expired (aws.Credentials' CanExpire and Expires): a token signed
// with expired temporary credentials is refused.
func (s *TokenSource) Token(ctx context.Context) (cache.Secret, error) {
	if s == nil || s.signer == nil {
		return "", fmt.Errorf("%w: TokenSource not created by NewTokenSource", errToken)
	}
	if ctx == nil {
		return "", fmt.Errorf("%w: nil context", errToken)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if s.token != "" && now.Sub(s.created) < s.refresh && (s.expires.IsZero() || now.Before(s.expires.Add(-credentialsMargin))) {
		return s.token, nil
	}
	tok, expires, err := s.presign(ctx, now)
	if err != nil {
		return "", err
	}
	s.token, s.created, s.expires = tok, now, expires
	return tok, nil
}

// credentialsMargin is how long before its credentials expire a token is
// replaced: one handed out at the last moment would reach AUTH expired.
const credentialsMargin = time.Minute

// presign signs a token at now and returns it with its credentials' expiry
// (zero when they do not expire).
func (s *TokenSource) presign(ctx context.Context, now time.Time) (cache.Secret, time.Time, error) {
	creds, err := s.creds.Retrieve(ctx)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("%w: retrieve credentials: %w", errToken, err)
	}
	var expires time.Time
	if creds.CanExpire {
		expires = creds.Expires
	}
	tok, err := s.sign(ctx, creds, now)
	return tok, expires, err
}

func (s *TokenSource) sign(ctx context.Context, creds aws.Credentials, now time.Time) (cache.Secret, error) {
	q := url.Values{}
	q.Set("Action", "connect")
	q.Set("User", s.user)
	if s.serverless {
		q.Set("ResourceType", "ServerlessCache")
	}
	q.Set("X-Amz-Expires", strconv.Itoa(int(tokenLifetime/time.Second)))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.cacheName+"/", nil)
	if err != nil {
		return "", fmt.Errorf("%w: %w", errToken, err)
	}
	req.URL.RawQuery = q.Encode()
	signed, _, err := s.signer.PresignHTTP(ctx, creds, req, emptyPayloadHash, "elasticache", s.region, now.UTC())
	if err != nil {
		return "", fmt.Errorf("%w: presign: %w", errToken, err)
	}
	return cache.Secret(strings.TrimPrefix(signed, "http://")), nil
}
