// Package cachecli holds what the cache example tools (cacheprobe,
// cachebench, report) share on the command line: the endpoint flags, the
// GET:SET ratio, the choice of workload engine (glide only where it is built
// in) and the phase medians they print.
package cachecli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/netperfkit/netperfkit/cache"
	"github.com/netperfkit/netperfkit/cache/iam"
)

// PasswordEnv is the environment variable the password is read from when the
// password flag is not given, so that it stays out of shell history and
// process listings.
const PasswordEnv = "NETPERFKIT_CACHE_PASSWORD"

// EndpointFlags holds the connection flags: addr, cluster, tls, cacert,
// insecure, user, password, iam-cache, iam-region and serverless.
type EndpointFlags struct {
	Addr       string
	Cluster    bool
	TLS        bool
	CACert     string
	Insecure   bool
	User       string
	password   string
	IAMCache   string
	IAMRegion  string
	Serverless bool
}

// NewEndpointFlags defines the connection flags on fs. With an empty prefix
// they are -addr, -cluster, -tls...; with prefix "cache" the address is
// -cache and the others -cache-cluster, -cache-tls..., for tools that also
// take other endpoints.
func NewEndpointFlags(fs *flag.FlagSet, prefix string) *EndpointFlags {
	name := func(n string) string {
		if prefix == "" {
			return n
		}
		return prefix + "-" + n
	}
	addr := "addr"
	if prefix != "" {
		addr = prefix
	}
	f := &EndpointFlags{}
	fs.StringVar(&f.Addr, addr, "", "cache endpoint host:port (empty: start a local server); tools that run several take LABEL=host:port,...")
	fs.BoolVar(&f.Cluster, name("cluster"), false, "cluster mode (CLUSTER SLOTS, slot routing)")
	fs.BoolVar(&f.TLS, name("tls"), false, "use TLS")
	fs.StringVar(&f.CACert, name("cacert"), "", "PEM file of the CA to trust instead of the system roots")
	fs.BoolVar(&f.Insecure, name("insecure"), false, "do not verify the server certificate")
	fs.StringVar(&f.User, name("user"), "", "ACL user name (or IAM user id)")
	fs.StringVar(&f.password, name("password"), "", "password (default: $"+PasswordEnv+")")
	fs.StringVar(&f.IAMCache, name("iam-cache"), "", "ElastiCache IAM auth: replication group id or serverless cache name")
	fs.StringVar(&f.IAMRegion, name("iam-region"), "", "ElastiCache IAM auth: region (default: AWS configuration)")
	fs.BoolVar(&f.Serverless, name("serverless"), false, "ElastiCache IAM auth for a serverless cache")
	return f
}

// Password returns the password flag or, when it is empty, $NETPERFKIT_CACHE_PASSWORD.
func (f *EndpointFlags) Password() cache.Secret {
	if f.password != "" {
		return cache.Secret(f.password)
	}
	return cache.Secret(os.Getenv(PasswordEnv))
}

// Endpoint builds the Endpoint the flags describe, reading the CA file. It
// does not require an address; the caller decides what an empty one means.
func (f *EndpointFlags) Endpoint() (*cache.Endpoint, error) {
	ep := &cache.Endpoint{
		Addr:               f.Addr,
		Cluster:            f.Cluster,
		TLS:                f.TLS || f.CACert != "" || f.Insecure,
		InsecureSkipVerify: f.Insecure,
		User:               f.User,
		Password:           f.Password(),
	}
	if f.CACert != "" {
		pem, err := os.ReadFile(f.CACert)
		if err != nil {
			return nil, fmt.Errorf("cacert: %w", err)
		}
		ep.CACertPEM = pem
	}
	if f.IAMCache != "" {
		if f.User == "" {
			return nil, errors.New("IAM authentication needs a user (the IAM-enabled user id)")
		}
		// Loading the AWS configuration reads the environment and files; it
		// makes no network call.
		ts, err := iam.NewTokenSource(context.Background(), f.User,
			&iam.Config{CacheName: f.IAMCache, Region: f.IAMRegion, Serverless: f.Serverless})
		if err != nil {
			return nil, err
		}
		ep.TLS = true
		ep.Password, ep.Credentials = "", ts.Credentials
	} else if f.Serverless || f.IAMRegion != "" {
		return nil, errors.New("serverless and iam-region need iam-cache")
	}
	return ep, nil
}

// ParseRatio parses a "GET:SET" ratio such as "1:1" or "9:1".
func ParseRatio(s string) (get, set int, err error) {
	a, b, ok := strings.Cut(s, ":")
	if ok {
		get, err = strconv.Atoi(a)
		if err == nil {
			set, err = strconv.Atoi(b)
		}
	}
	if !ok || err != nil || get < 0 || set < 0 || get+set == 0 {
		return 0, 0, fmt.Errorf("ratio %q is not GET:SET with non-negative integers", s)
	}
	return get, set, nil
}
