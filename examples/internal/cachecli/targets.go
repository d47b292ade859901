package cachecli

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/netperfkit/netperfkit/cache"
)

// Target is one labelled endpoint configuration of a multi-endpoint run
// (the field study's N1..N4, SV1, SV2, SP1).
type Target struct {
	Label    string
	Endpoint *cache.Endpoint
}

// TargetsConfig is the -cache-config file: per-endpoint settings, in JSON or
// YAML (JSON is read as YAML).
//
//	endpoints:
//	  - label: N1
//	    addr: my-cache.xxxx.use1.cache.amazonaws.com:6379
//	    cluster: true
//	  - label: SV1
//	    addr: my-sv.serverless.use1.cache.amazonaws.com:6379
//	    tls: true
//	    user: iam-user
//	    iam: {cache: my-sv, region: us-east-1, serverless: true}
//	  - label: L1
//	    addr: 127.0.0.1:6380
//	    tls: true
//	    cacert: ca.pem
//	    user: bench
//	    password_env: BENCH_PASSWORD
type TargetsConfig struct {
	Endpoints []EndpointConfig `yaml:"endpoints" json:"endpoints"`
}

// EndpointConfig is one endpoint of TargetsConfig. Unset fields take the
// -cache-* flags' values. Passwords are not read from the file: name an
// environment variable with password_env.
type EndpointConfig struct {
	Label       string        `yaml:"label"`
	Addr        string        `yaml:"addr"`
	Cluster     *bool         `yaml:"cluster"`
	TLS         *bool         `yaml:"tls"`
	CACert      string        `yaml:"cacert"`
	Insecure    *bool         `yaml:"insecure"`
	ServerName  string        `yaml:"server_name"`
	User        string        `yaml:"user"`
	PasswordEnv string        `yaml:"password_env"`
	IAM         *IAMSettings  `yaml:"iam"`
	Connect     time.Duration `yaml:"connect_timeout"`
	Request     time.Duration `yaml:"request_timeout"`
}

// IAMSettings is the iam block of an EndpointConfig.
type IAMSettings struct {
	Cache      string `yaml:"cache"`
	Region     string `yaml:"region"`
	Serverless bool   `yaml:"serverless"`
}

// ParseTargetsConfig reads a -cache-config file's content. Unknown keys are
// errors, so that a misspelt setting does not silently fall back.
func ParseTargetsConfig(b []byte) (*TargetsConfig, error) {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var c TargetsConfig
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("cache config: %w", err)
	}
	seen := map[string]bool{}
	for i, e := range c.Endpoints {
		if e.Label == "" {
			return nil, fmt.Errorf("cache config: endpoint %d has no label", i+1)
		}
		if seen[e.Label] {
			return nil, fmt.Errorf("cache config: label %q appears twice", e.Label)
		}
		seen[e.Label] = true
	}
	return &c, nil
}

func (c *TargetsConfig) find(label string) *EndpointConfig {
	if c == nil {
		return nil
	}
	for i := range c.Endpoints {
		if c.Endpoints[i].Label == label {
			return &c.Endpoints[i]
		}
	}
	return nil
}

// Targets builds the endpoints of a multi-endpoint run. The address flag
// lists them as LABEL=host:port, a bare host:port (labelled by its
// address) or a bare LABEL whose address is in the config file; with no
// address flag every endpoint of the config file runs, in its order.
// configFile ("" for none) holds per-endpoint settings; the other flags
// (-cache-tls, -cache-user ...) are the defaults of every endpoint. An
// empty result means no endpoint was named.
func (f *EndpointFlags) Targets(configFile string) ([]Target, error) {
	var cfg *TargetsConfig
	if configFile != "" {
		b, err := os.ReadFile(configFile)
		if err != nil {
			return nil, err
		}
		if cfg, err = ParseTargetsConfig(b); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Base(configFile), err)
		}
	}
	var out []Target
	add := func(label, addr string) error {
		for _, t := range out {
			if t.Label == label {
				return fmt.Errorf("label %q appears twice", label)
			}
		}
		ep, err := f.endpointFor(label, addr, cfg.find(label))
		if err != nil {
			return fmt.Errorf("%s: %w", label, err)
		}
		out = append(out, Target{Label: label, Endpoint: ep})
		return nil
	}
	if strings.TrimSpace(f.Addr) == "" {
		if cfg != nil {
			for _, e := range cfg.Endpoints {
				if err := add(e.Label, ""); err != nil {
					return nil, err
				}
			}
		}
		return out, nil
	}
	for _, item := range strings.Split(f.Addr, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		label, addr, hasLabel := strings.Cut(item, "=")
		if !hasLabel {
			label, addr = item, item
			if cfg.find(item) != nil {
				addr = ""
			}
		}
		if err := add(label, addr); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// endpointFor applies an endpoint's config entry (may be nil) over the
// flags.
func (f *EndpointFlags) endpointFor(label, addr string, e *EndpointConfig) (*cache.Endpoint, error) {
	g := *f
	if e != nil {
		if addr == "" {
			addr = e.Addr
		}
		g.Cluster = orBool(e.Cluster, g.Cluster)
		g.TLS = orBool(e.TLS, g.TLS)
		g.Insecure = orBool(e.Insecure, g.Insecure)
		g.CACert = orString(e.CACert, g.CACert)
		g.User = orString(e.User, g.User)
		if e.PasswordEnv != "" {
			pw, ok := os.LookupEnv(e.PasswordEnv)
			if !ok {
				return nil, fmt.Errorf("password_env %s is not set", e.PasswordEnv)
			}
			g.password = pw
		}
		if e.IAM != nil {
			g.IAMCache, g.IAMRegion, g.Serverless = e.IAM.Cache, e.IAM.Region, e.IAM.Serverless
		}
	}
	if addr == "" {
		return nil, errors.New("no address (give LABEL=host:port, or addr in the config file)")
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, fmt.Errorf("address %q is not host:port (nor a label of the config file)", addr)
	}
	g.Addr = addr
	ep, err := g.Endpoint()
	if err != nil {
		return nil, err
	}
	if e != nil {
		ep.ServerName = e.ServerName
		ep.ConnectTimeout, ep.RequestTimeout = e.Connect, e.Request
		if e.ServerName != "" {
			ep.TLS = true
		}
	}
	return ep, nil
}

func orBool(p *bool, def bool) bool {
	if p != nil {
		return *p
	}
	return def
}

func orString(s, def string) string {
	if s != "" {
		return s
	}
	return def
}
