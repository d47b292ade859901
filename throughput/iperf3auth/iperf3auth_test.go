package iperf3auth_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/netperfkit/netperfkit/throughput/iperf3auth"
)

// TestParse reads both PEM forms of a key and refuses what is not one.
func TestParse(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	priv := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	require.NoError(t, err)
	pub := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})

	gotPriv, err := iperf3auth.ParsePrivateKey(priv)
	require.NoError(t, err)
	assert.True(t, key.Equal(gotPriv))
	gotPub, err := iperf3auth.ParsePublicKey(pub)
	require.NoError(t, err)
	assert.True(t, key.PublicKey.Equal(gotPub))

	for _, bad := range [][]byte{nil, []byte("not pem"), pub} {
		_, err := iperf3auth.ParsePrivateKey(bad)
		assert.ErrorContains(t, err, "iperf3auth: ")
	}
	for _, bad := range [][]byte{nil, []byte("not pem")} {
		_, err := iperf3auth.ParsePublicKey(bad)
		assert.ErrorContains(t, err, "iperf3auth: ")
	}
}

// TestClientHidesPassword: no verb prints the password.
func TestClientHidesPassword(t *testing.T) {
	a := iperf3auth.Client{User: "mario", Password: "s3cret"}
	for _, f := range []string{"%v", "%+v", "%#v", "%s"} {
		assert.NotContains(t, fmt.Sprintf(f, a), "s3cret", f)
		assert.NotContains(t, fmt.Sprintf(f, &a), "s3cret", f)
	}
	assert.NotPanics(t, func() { _ = iperf3auth.Client{}.String() })
}
