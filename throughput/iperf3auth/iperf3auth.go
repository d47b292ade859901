// Package iperf3auth holds the credentials of iperf3's RSA authentication
// (iperf3 3.x --username, --rsa-public-key-path, --rsa-private-key-path,
// --authorized-users-path), for package throughput's clients
// (throughput.Config.Auth) and servers (throughput.ServerConfig.Auth),
// and reads iperf3's PEM key files. It imports only the standard library
// and netperfkit's internal iperf3 codec; docs/conventions.md states the
// conventions it shares with the rest of netperfkit.
package iperf3auth

import (
	"crypto/rsa"
	"fmt"
	"time"

	"github.com/netperfkit/netperfkit/internal/iperfauth"
)

// Client are the credentials a client presents to a server that requires
// iperf3's RSA authentication (iperf3 --username, --rsa-public-key-path
// and IPERF3_PASSWORD). throughput.Run encrypts them with the server's
// public key and sends them as iperf3 3.x does; the password never appears
// in a Result, an error or String's output.
type Client struct {
	User     string
	Password string
	// PublicKey is the server's RSA public key (ParsePublicKey reads
	// iperf3's PEM files).
	PublicKey *rsa.PublicKey
	// PKCS1Padding uses RSA PKCS#1 v1.5 padding (iperf3's
	// --use-pkcs1-padding) instead of OAEP; both ends must agree.
	PKCS1Padding bool
}

// String names the user and hides the password.
func (a Client) String() string {
	return fmt.Sprintf("iperf3auth.Client{User: %q, Password: <hidden>}", a.User)
}

// GoString is String, so %#v hides the password too.
func (a Client) GoString() string { return a.String() }

// Server makes a throughput server require iperf3's RSA authentication
// (iperf3 --rsa-private-key-path, --authorized-users-path,
// --time-skew-threshold, --use-pkcs1-padding). A client whose token is
// missing, undecryptable, outside the time skew threshold or whose user
// and password are not authorized is refused as iperf3 3.21 refuses it,
// with SERVER_ERROR "test authorization failed" (a stock client prints
// exactly that), and the refusal reaches ServerConfig.OnFailure with
// SessionError.Reason "access_denied" and throughput.ErrAuthFailed.
type Server struct {
	// PrivateKey decrypts the clients' tokens (ParsePrivateKey reads
	// iperf3's PEM files). Required.
	PrivateKey *rsa.PrivateKey
	// UsersPath is iperf3's authorized-users file: "user,hash" lines, the
	// hash being the lower-case hex SHA-256 of "{user}password". It is read
	// again for every test, as iperf3 reads it, so edits apply at once.
	UsersPath string
	// Users is used when UsersPath is "": user name to the same hash.
	Users map[string]string
	// SkewThreshold is how far a token's clock may be from the server's,
	// either way, in whole seconds; 0 means 10 s, iperf3's default.
	SkewThreshold time.Duration
	// PKCS1Padding expects RSA PKCS#1 v1.5 padding instead of OAEP.
	PKCS1Padding bool
}

// ParsePublicKey reads the first RSA public key of PEM data, in either
// form iperf3 accepts ("PUBLIC KEY" or "RSA PUBLIC KEY").
func ParsePublicKey(pemData []byte) (*rsa.PublicKey, error) {
	k, err := iperfauth.ParsePublicKeyPEM(pemData)
	if err != nil {
		return nil, fmt.Errorf("iperf3auth: %w", err)
	}
	return k, nil
}

// ParsePrivateKey reads the first RSA private key of PEM data (PKCS#1 or
// unencrypted PKCS#8).
func ParsePrivateKey(pemData []byte) (*rsa.PrivateKey, error) {
	k, err := iperfauth.ParsePrivateKeyPEM(pemData)
	if err != nil {
		return nil, fmt.Errorf("iperf3auth: %w", err)
	}
	return k, nil
}
