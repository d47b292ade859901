package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// withTestWebConfig returns the DaemonSet's args with -web.config.file
// pointing at the Secret netperfkit-agent-web's web-config.yml as the pod
// mounts it, its certificate paths (the TLS Secret's mount) replaced by a
// test certificate's: so parseConfig checks the Secret's configuration,
// bcrypt hash included, as the agent will read it.
func withTestWebConfig(t *testing.T, objs map[string]k8sObject, args []string) []string {
	t.Helper()
	sec, ok := objs["Secret"]
	require.True(t, ok, "kubernetes.yaml has the web configuration's Secret")
	assert.Equal(t, "netperfkit-agent-web", sec.Metadata.Name)
	web := sec.StringData["web-config.yml"]
	require.NotEmpty(t, web)
	pki := newWebPKI(t)
	web = strings.ReplaceAll(web, "/etc/netperfkit/tls/tls.crt", pki.certFile)
	web = strings.ReplaceAll(web, "/etc/netperfkit/tls/tls.key", pki.keyFile)
	f := filepath.Join(t.TempDir(), "web-config.yml")
	require.NoError(t, os.WriteFile(f, []byte(web), 0o600))
	out := make([]string, 0, len(args))
	found := false
	for _, a := range args {
		if p, ok := strings.CutPrefix(a, "-web.config.file="); ok {
			assert.Equal(t, "/etc/netperfkit/web/web-config.yml", p, "the web Secret's mount")
			a, found = "-web.config.file="+f, true
		}
		out = append(out, a)
	}
	require.True(t, found, "the DaemonSet serves /metrics with -web.config.file")
	return out
}

// TestDeployPrometheusScrape: the scrape job scrapes the agents' Service
// over TLS with basic auth, from the files of its Secret.
func TestDeployPrometheusScrape(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(deployDir, "prometheus-scrape.yaml"))
	require.NoError(t, err)
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	objs := map[string]k8sObject{}
	for {
		var o k8sObject
		if dec.Decode(&o) != nil {
			break
		}
		objs[o.Kind] = o
	}
	require.Contains(t, objs, "Secret")
	require.Contains(t, objs, "ConfigMap")
	for _, k := range []string{"password", "ca.crt"} {
		assert.Contains(t, objs["Secret"].StringData, k)
	}
	var job struct {
		ScrapeConfigs []struct {
			JobName   string `yaml:"job_name"`
			Scheme    string
			TLSConfig struct {
				CAFile string `yaml:"ca_file"`
			} `yaml:"tls_config"`
			BasicAuth struct {
				Username     string
				PasswordFile string `yaml:"password_file"`
			} `yaml:"basic_auth"`
		} `yaml:"scrape_configs"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(objs["ConfigMap"].Data["netperfkit.yml"]), &job))
	require.Len(t, job.ScrapeConfigs, 1)
	j := job.ScrapeConfigs[0]
	assert.Equal(t, "https", j.Scheme)
	assert.Equal(t, "prometheus", j.BasicAuth.Username)
	assert.Equal(t, "/etc/prometheus/netperfkit/password", j.BasicAuth.PasswordFile)
	assert.Equal(t, "/etc/prometheus/netperfkit/ca.crt", j.TLSConfig.CAFile)
}
