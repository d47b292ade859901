package cachecli

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func flagsFor(t *testing.T, args ...string) *EndpointFlags {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	f := NewEndpointFlags(fs, "cache")
	require.NoError(t, fs.Parse(args))
	return f
}

func writeFile(t *testing.T, name, s string) string {
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte(s), 0o600))
	return p
}

func TestTargetsFromFlag(t *testing.T) {
	ts, err := flagsFor(t, "-cache", "N1=10.0.0.1:6379, N2=10.0.0.2:6380,10.0.0.3:6379", "-cache-tls").Targets("")
	require.NoError(t, err)
	require.Len(t, ts, 3)
	assert.Equal(t, []string{"N1", "N2", "10.0.0.3:6379"}, []string{ts[0].Label, ts[1].Label, ts[2].Label})
	assert.Equal(t, "10.0.0.2:6380", ts[1].Endpoint.Addr)
	assert.True(t, ts[2].Endpoint.TLS, "the flags are every endpoint's defaults")

	ts, err = flagsFor(t).Targets("")
	require.NoError(t, err)
	assert.Empty(t, ts)

	_, err = flagsFor(t, "-cache", "A=h:1,A=h:2").Targets("")
	assert.ErrorContains(t, err, `label "A" appears twice`)
	_, err = flagsFor(t, "-cache", "A=nohost").Targets("")
	assert.ErrorContains(t, err, "A: ")
}

const yamlConfig = `
endpoints:
  - label: N1
    addr: 10.0.0.1:6379
    cluster: true
  - label: SV1
    addr: sv.example:6379
    user: iam-user
    iam: {cache: My-SV, region: us-east-1, serverless: true}
  - label: L1
    addr: 127.0.0.1:6380
    tls: false
    user: bench
    password_env: NPK_TEST_PW
    connect_timeout: 2s
    server_name: cache.local
`

func TestTargetsConfigYAMLAndJSON(t *testing.T) {
	t.Setenv("NPK_TEST_PW", "s3cret")
	// Static AWS credentials, so that the IAM token can be signed here.
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	y := writeFile(t, "c.yaml", yamlConfig)
	ts, err := flagsFor(t).Targets(y)
	require.NoError(t, err)
	require.Len(t, ts, 3, "no -cache: every endpoint of the file, in order")
	n1, sv1, l1 := ts[0].Endpoint, ts[1].Endpoint, ts[2].Endpoint
	assert.True(t, n1.Cluster)
	assert.False(t, n1.TLS)
	require.NotNil(t, sv1.Credentials)
	user, tok, err := sv1.Credentials(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "iam-user", user)
	assert.Contains(t, tok.Reveal(), "ResourceType=ServerlessCache", "a serverless cache's token")
	assert.True(t, sv1.TLS, "IAM implies TLS")
	assert.Equal(t, "iam-user", sv1.User)
	assert.Equal(t, "s3cret", l1.Password.Reveal())
	assert.Equal(t, 2*time.Second, l1.ConnectTimeout)
	assert.True(t, l1.TLS, "a server name implies TLS")

	// -cache picks and orders them; a bare label takes its address from
	// the file, LABEL=addr overrides it.
	ts, err = flagsFor(t, "-cache", "SV1,N1=10.9.9.9:7000,X=h:1").Targets(y)
	require.NoError(t, err)
	require.Len(t, ts, 3)
	assert.Equal(t, "sv.example:6379", ts[0].Endpoint.Addr)
	assert.Equal(t, "10.9.9.9:7000", ts[1].Endpoint.Addr)
	assert.True(t, ts[1].Endpoint.Cluster, "the file's settings apply")
	assert.False(t, ts[2].Endpoint.Cluster)

	j := writeFile(t, "c.json", `{"endpoints": [{"label": "N1", "addr": "h:1", "tls": true, "insecure": true}]}`)
	ts, err = flagsFor(t).Targets(j)
	require.NoError(t, err)
	require.Len(t, ts, 1)
	assert.True(t, ts[0].Endpoint.InsecureSkipVerify)

	for _, bad := range []string{
		"endpoints:\n  - label: A\n    adr: h:1\n",
		"endpoints:\n  - addr: h:1\n",
		"endpoints:\n  - label: A\n    addr: h:1\n  - label: A\n    addr: h:2\n",
		"endpoints: [",
	} {
		_, err := flagsFor(t).Targets(writeFile(t, "bad.yaml", bad))
		assert.Error(t, err, bad)
	}
	_, err = flagsFor(t, "-cache", "L1").Targets(writeFile(t, "c.yaml", "endpoints:\n  - label: L1\n    password_env: NPK_UNSET_VAR\n    addr: h:1\n"))
	assert.ErrorContains(t, err, "password_env NPK_UNSET_VAR is not set")
	_, err = flagsFor(t, "-cache", "Q").Targets(y)
	assert.ErrorContains(t, err, `address "Q" is not host:port (nor a label of the config file)`)
}

func FuzzParseTargetsConfig(f *testing.F) {
	f.Add([]byte(yamlConfig))
	f.Add([]byte(`{"endpoints": [{"label": "N1", "addr": "h:1"}]}`))
	f.Add([]byte("endpoints: [{label: a}, {label: a}]"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseTargetsConfig(b)
		if err == nil {
			for _, e := range c.Endpoints {
				if e.Label == "" {
					t.Fatal("an endpoint without a label was accepted")
				}
			}
		}
	})
}
