package iperfauth

import (
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
)

// ParsePublicKeyPEM reads the first public key in PEM data, as iperf3's
// PEM_read_bio_PUBKEY does with OpenSSL 3: a SubjectPublicKeyInfo ("PUBLIC
// KEY") or a PKCS#1 ("RSA PUBLIC KEY") block. Other blocks before it are
// skipped. The key must be RSA.
func ParsePublicKeyPEM(data []byte) (*rsa.PublicKey, error) {
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return nil, fmt.Errorf("%w: no PUBLIC KEY or RSA PUBLIC KEY PEM block", ErrSetup)
		}
		switch b.Type {
		case "PUBLIC KEY":
			k, err := x509.ParsePKIXPublicKey(b.Bytes)
			if err != nil {
				return nil, fmt.Errorf("%w: %w", ErrSetup, err)
			}
			rk, ok := k.(*rsa.PublicKey)
			if !ok {
				return nil, fmt.Errorf("%w: public key is %T, not RSA", ErrSetup, k)
			}
			return rk, nil
		case "RSA PUBLIC KEY":
			k, err := x509.ParsePKCS1PublicKey(b.Bytes)
			if err != nil {
				return nil, fmt.Errorf("%w: %w", ErrSetup, err)
			}
			return k, nil
		}
	}
}

// ParsePrivateKeyPEM reads the first private key in PEM data: PKCS#1 ("RSA
// PRIVATE KEY") or unencrypted PKCS#8 ("PRIVATE KEY"). iperf3 would prompt
// for the pass phrase of an encrypted key; this package refuses one.
func ParsePrivateKeyPEM(data []byte) (*rsa.PrivateKey, error) {
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return nil, fmt.Errorf("%w: no RSA PRIVATE KEY or PRIVATE KEY PEM block", ErrSetup)
		}
		switch b.Type {
		case "RSA PRIVATE KEY":
			k, err := x509.ParsePKCS1PrivateKey(b.Bytes)
			if err != nil {
				return nil, fmt.Errorf("%w: %w", ErrSetup, err)
			}
			return k, nil
		case "PRIVATE KEY":
			k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
			if err != nil {
				return nil, fmt.Errorf("%w: %w", ErrSetup, err)
			}
			rk, ok := k.(*rsa.PrivateKey)
			if !ok {
				return nil, fmt.Errorf("%w: private key is %T, not RSA", ErrSetup, k)
			}
			return rk, nil
		case "ENCRYPTED PRIVATE KEY":
			return nil, fmt.Errorf("%w: encrypted private keys are not supported", ErrSetup)
		}
	}
}

// LoadPublicKey reads a PEM public key file (iperf3's --rsa-public-key-path).
func LoadPublicKey(path string) (*rsa.PublicKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	return ParsePublicKeyPEM(data)
}

// LoadPrivateKey reads a PEM private key file (iperf3's --rsa-private-key-path).
func LoadPrivateKey(path string) (*rsa.PrivateKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSetup, err)
	}
	return ParsePrivateKeyPEM(data)
}
