package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"
)

// webPKI is a CA, a server certificate for 127.0.0.1 and the lab
// addresses given, and a client certificate, written as PEM files in dir.
type webPKI struct {
	dir                           string
	caFile, certFile, keyFile     string
	clientCertFile, clientKeyFile string
	pool                          *x509.CertPool
	clientCert                    tls.Certificate
	caCert                        *x509.Certificate
	caKey                         *ecdsa.PrivateKey
	serverIPs                     []net.IP
}

func newWebPKI(t *testing.T, ips ...string) *webPKI {
	t.Helper()
	p := &webPKI{dir: t.TempDir(), serverIPs: []net.IP{net.IPv4(127, 0, 0, 1)}}
	for _, s := range ips {
		p.serverIPs = append(p.serverIPs, net.ParseIP(s))
	}
	var err error
	p.caKey, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "netperfkit test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, ca, ca, &p.caKey.PublicKey, p.caKey)
	require.NoError(t, err)
	p.caCert, err = x509.ParseCertificate(der)
	require.NoError(t, err)
	p.pool = x509.NewCertPool()
	p.pool.AddCert(p.caCert)
	p.caFile = p.write(t, "ca.pem", "CERTIFICATE", der)
	p.certFile, p.keyFile, _ = p.leaf(t, "server", 2, x509.ExtKeyUsageServerAuth)
	p.clientCertFile, p.clientKeyFile, p.clientCert = p.leaf(t, "client", 3, x509.ExtKeyUsageClientAuth)
	return p
}

func (p *webPKI) leaf(t *testing.T, name string, serial int64, usage x509.ExtKeyUsage) (string, string, tls.Certificate) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	c := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
	}
	if usage == x509.ExtKeyUsageServerAuth {
		c.IPAddresses = p.serverIPs
	}
	der, err := x509.CreateCertificate(rand.Reader, c, p.caCert, &key.PublicKey, p.caKey)
	require.NoError(t, err)
	kder, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	cf := p.write(t, name+".pem", "CERTIFICATE", der)
	kf := p.write(t, name+"-key.pem", "EC PRIVATE KEY", kder)
	pair, err := tls.LoadX509KeyPair(cf, kf)
	require.NoError(t, err)
	return cf, kf, pair
}

func (p *webPKI) write(t *testing.T, name, typ string, der []byte) string {
	f := filepath.Join(p.dir, name)
	require.NoError(t, os.WriteFile(f, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600))
	return f
}

// webConfig writes an exporter-toolkit web configuration: TLS with the
// PKI's server certificate, client certificates as clientAuth says
// ("" leaves them out), and basic auth users (name: bcrypt hash).
func (p *webPKI) webConfig(t *testing.T, clientAuth string, users map[string]string) string {
	var b strings.Builder
	b.WriteString("tls_server_config:\n  cert_file: " + p.certFile + "\n  key_file: " + p.keyFile + "\n")
	if clientAuth != "" {
		b.WriteString("  client_auth_type: " + clientAuth + "\n  client_ca_file: " + p.caFile + "\n")
	}
	if len(users) > 0 {
		b.WriteString("basic_auth_users:\n")
		for u, h := range users {
			b.WriteString("  " + u + ": '" + h + "'\n")
		}
	}
	f := filepath.Join(p.dir, "web-"+clientAuth+".yml")
	require.NoError(t, os.WriteFile(f, []byte(b.String()), 0o600))
	return f
}

func bcryptHash(t *testing.T, pass string) string {
	h, err := bcrypt.GenerateFromPassword([]byte(pass), bcrypt.MinCost)
	require.NoError(t, err)
	return string(h)
}

func get(t *testing.T, c *http.Client, url, user, pass string) (int, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// TestAgentWebConfigTLSAndBasicAuth: with -web.config.file /metrics is
// served over TLS only, refuses a scrape without credentials or with a
// wrong password (401), serves one with them, and with
// RequireAndVerifyClientCert refuses a client without a certificate.
func TestAgentWebConfigTLSAndBasicAuth(t *testing.T) {
	pki := newWebPKI(t)
	cfgFile := pki.webConfig(t, "", map[string]string{"prometheus": bcryptHash(t, "s3cret")})
	url, log, _ := startAgent(t, nil, "-iperf3-port", "0", "-sockperf-port", "0", "-web.config.file", cfgFile)
	url = strings.Replace(url, "http://", "https://", 1)
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pki.pool}}}

	code, err := get(t, c, url, "", "")
	require.NoError(t, err)
	assert.Equal(t, http.StatusUnauthorized, code, "no credentials")
	code, err = get(t, c, url, "prometheus", "wrong")
	require.NoError(t, err)
	assert.Equal(t, http.StatusUnauthorized, code, "wrong password")
	code, err = get(t, c, url, "prometheus", "s3cret")
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, code)
	code, err = get(t, http.DefaultClient, strings.Replace(url, "https://", "http://", 1), "prometheus", "s3cret")
	assert.True(t, err != nil || code == http.StatusBadRequest, "plain HTTP is not served (%d, %v)", code, err)
	assert.NotContains(t, log.String(), "s3cret")

	mtls := pki.webConfig(t, "RequireAndVerifyClientCert", nil)
	url2, _, _ := startAgent(t, nil, "-iperf3-port", "0", "-sockperf-port", "0", "-web.config.file", mtls)
	url2 = strings.Replace(url2, "http://", "https://", 1)
	_, err = get(t, c, url2, "", "")
	assert.Error(t, err, "no client certificate: the handshake fails")
	withCert := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: pki.pool, Certificates: []tls.Certificate{pki.clientCert}}}}
	code, err = get(t, withCert, url2, "", "")
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, code)
}

// TestAgentRefusesBadWebConfig: a web configuration that does not parse
// or names missing files stops the agent at start.
func TestAgentRefusesBadWebConfig(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yml")
	require.NoError(t, os.WriteFile(bad, []byte("tls_server_config:\n  cert_file: /nonexistent.pem\n  key_file: /nonexistent-key.pem\n"), 0o600))
	unknown := filepath.Join(dir, "unknown.yml")
	require.NoError(t, os.WriteFile(unknown, []byte("tls_server_confg: {}\n"), 0o600))
	for _, f := range []string{bad, unknown, filepath.Join(dir, "missing.yml")} {
		_, err := parseConfig([]string{"-web.config.file", f}, os.Stderr)
		assert.ErrorContains(t, err, "-web.config.file", f)
	}
}
