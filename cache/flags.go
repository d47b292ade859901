package cache

import (
	"errors"
	"flag"
	"fmt"
	"os"
)

// PasswordEnv is the environment variable EndpointFlags reads the password
// from when -password is not given, so that it stays out of shell history and
// process listings.
const PasswordEnv = "NETPERFKIT_CACHE_PASSWORD"

// EndpointFlags holds the connection flags shared by the cacheprobe and
// cachebench tools, for programs that want the same command line: -addr,
// -cluster, -tls, -cacert, -insecure, -user, -password, -iam-cache,
// -iam-region and -serverless.
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

// NewEndpointFlags defines the connection flags on fs.
func NewEndpointFlags(fs *flag.FlagSet) *EndpointFlags {
	f := &EndpointFlags{}
	fs.StringVar(&f.Addr, "addr", "", "endpoint host:port (empty: start a local server)")
	fs.BoolVar(&f.Cluster, "cluster", false, "cluster mode (CLUSTER SLOTS, slot routing)")
	fs.BoolVar(&f.TLS, "tls", false, "use TLS")
	fs.StringVar(&f.CACert, "cacert", "", "PEM file of the CA to trust instead of the system roots")
	fs.BoolVar(&f.Insecure, "insecure", false, "do not verify the server certificate")
	fs.StringVar(&f.User, "user", "", "ACL user name (or IAM user id)")
	fs.StringVar(&f.password, "password", "", "password (default: $"+PasswordEnv+")")
	fs.StringVar(&f.IAMCache, "iam-cache", "", "ElastiCache IAM auth: replication group id or serverless cache name")
	fs.StringVar(&f.IAMRegion, "iam-region", "", "ElastiCache IAM auth: region (default: AWS configuration)")
	fs.BoolVar(&f.Serverless, "serverless", false, "ElastiCache IAM auth for a serverless cache")
	return f
}

// Password returns the -password flag or, when it is empty, $NETPERFKIT_CACHE_PASSWORD.
func (f *EndpointFlags) Password() Secret {
	if f.password != "" {
		return Secret(f.password)
	}
	return Secret(os.Getenv(PasswordEnv))
}

// Endpoint builds the Endpoint the flags describe, reading the CA file. It
// does not require -addr; the caller decides what an empty address means.
func (f *EndpointFlags) Endpoint() (*Endpoint, error) {
	ep := &Endpoint{
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
			return nil, fmt.Errorf("cache: -cacert: %w", err)
		}
		ep.CACertPEM = pem
	}
	if f.IAMCache != "" {
		if f.User == "" {
			return nil, errors.New("cache: IAM authentication needs -user (the IAM-enabled user id)")
		}
		ep.TLS = true
		ep.Password = ""
		ep.IAM = &IAMConfig{CacheName: f.IAMCache, Region: f.IAMRegion, Serverless: f.Serverless}
	} else if f.Serverless || f.IAMRegion != "" {
		return nil, errors.New("cache: -serverless and -iam-region need -iam-cache")
	}
	return ep, nil
}
